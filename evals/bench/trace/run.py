"""`steward bench trace` end to end: options in, replays, the tuned figures out (and a report).

The CLI (agent/cli/bench.py) parses the options and calls `bench`; the JSON it prints is
`{"controllers": {NAME: figures}}`, each family at its tuned knob (tuning.choose).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evals.bench.trace.calibrate import calibrated
from evals.bench.trace.figures import Figures
from evals.bench.trace.load import resolve
from evals.bench.trace.replay import Outcome, Prepared, Setup, prepare
from evals.bench.trace.tuning import choose, parse_controllers, run_all
from tools.errors import InvalidInput

FLEET = re.compile(r"fleet:(\d+)x(\d+)")


@dataclass(frozen=True, slots=True)
class Result:
    prep: Prepared
    runs: dict[str, list[Outcome]]
    chosen: dict[str, Outcome]

    def figures(self) -> dict[str, dict[str, dict[str, object]]]:
        return {"controllers": {n: o.figures.model_dump() for n, o in self.chosen.items()}}


def parse_profile(text: str) -> tuple[int, int] | None:
    if text == "homelab":
        return None
    found = FLEET.fullmatch(text)
    if found is None:
        raise InvalidInput(f"--profile {text!r}: give homelab or fleet:NxM (e.g. fleet:64x8)")
    nodes, cards = int(found[1]), int(found[2])
    if not (1 <= nodes <= 20_000 and 1 <= cards <= 16):
        raise InvalidInput(f"--profile {text}: nodes 1..20000 and cards per node 1..16")
    return nodes, cards


def bench(
    trace: str,
    *,
    profile: str = "homelab",
    controllers: str = "steward,static,keda,hpa,dynamo,rayserve,aibrix,oracle",
    slo_ttft_s: float = 3.0,
    duration_h: float = 1.0,
    rate_scale: float | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Result:
    if slo_ttft_s <= 0 or duration_h <= 0:
        raise InvalidInput("--slo-ttft and --duration must be > 0")
    if rate_scale is not None and rate_scale <= 0:
        raise InvalidInput(f"--rate-scale {rate_scale:g}: must be > 0")
    names = parse_controllers(controllers)
    duration_s = duration_h * 3600.0
    setup = Setup(
        shape=resolve(trace, duration_s),
        fleet=parse_profile(profile),
        slo_s=slo_ttft_s,
        duration_s=duration_s,
        rate_scale=rate_scale,
        seed=seed,
    )
    if progress is not None and rate_scale is None:
        progress("calibrating the load (the whole pool, held)")
    prep = calibrated(prepare(setup))
    runs = run_all(prep, names, progress)
    return Result(prep, runs, {n: choose(runs[n]) for n in names})


def table(result: Result) -> list[tuple[str, str, Figures]]:
    return [(n, o.knob, o.figures) for n, o in result.chosen.items()]


def write_report(result: Result, where: Path) -> Path:
    from evals.bench.trace import report  # matplotlib loads only for a report

    written: Path = report.write(result, where)
    return written
