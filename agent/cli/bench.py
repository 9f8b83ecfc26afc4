"""`steward bench …`: timed figures for the speed and memory targets.

Each area registers its own benchmark on `app` (`steward bench sim`, `policy`, `audit`, …). All
print `median_ms` and `p99_ms` (and more) with --json; `loop`, `policy` and `place` time fresh
observations (parsed from JSON, `--churn` of the nodes changed each time) and say their `churn`.
Targets are checked here, by benchmarks, never by timed unit tests.
"""

from __future__ import annotations

import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Annotated

import typer
from pydantic import BaseModel

app = typer.Typer(help="Benchmarks: print timing figures (median_ms, p99_ms) for a target.")

ChurnOpt = Annotated[
    float,
    typer.Option(
        "--churn",
        min=0.0,
        max=1.0,
        help="Share of the nodes that change from one observation to the next (every "
        "observation is parsed afresh from JSON, as a real backend builds it).",
    ),
]


class Figures(BaseModel):
    """Timing figures of one benchmark, in milliseconds."""

    name: str
    runs: int
    median_ms: float
    p99_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    peak_rss_mb: float


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def measure(
    name: str,
    fn: Callable[[], object],
    runs: int,
    warmup: int = 3,
    setup: Callable[[], object] | None = None,
) -> Figures:
    """Time `fn` `runs` times after `warmup` untimed calls (garbage collection included).

    `setup`, when given, runs untimed before every call (e.g. letting simulated time pass).
    """
    for _ in range(warmup):
        if setup is not None:
            setup()
        fn()
    samples: list[float] = []
    for _ in range(runs):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return figures(name, samples)


def figures(name: str, samples_ms: Sequence[float]) -> Figures:
    """The figures of timings taken elsewhere (at least one), in milliseconds."""
    ordered = sorted(samples_ms)
    p99_index = min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))
    return Figures(
        name=name,
        runs=len(ordered),
        median_ms=round(statistics.median(ordered), 4),
        p99_ms=round(ordered[p99_index], 4),
        mean_ms=round(statistics.fmean(ordered), 4),
        min_ms=round(ordered[0], 4),
        max_ms=round(ordered[-1], 4),
        peak_rss_mb=round(peak_rss_mb(), 1),
    )
