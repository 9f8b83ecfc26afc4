"""`steward bench trace --jobs N`: the replays run in N processes and the figures do not move."""

from __future__ import annotations

from typing import Any

from lab.bench.trace.calibrate import calibrated
from lab.bench.trace.run import bench
from tests.bench.conftest import prepared

WALL_CLOCK = {"median_ms", "p99_ms"}
"""Decision times measure the machine, the only figures that may differ between two runs."""


def _without_timings(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        k: _without_timings(v) if isinstance(v, dict) else v
        for k, v in doc.items()
        if k not in WALL_CLOCK
    }


def test_jobs_give_the_figures_of_one_process() -> None:
    def figures(jobs: int) -> dict[str, Any]:
        result = bench("sinusoid", controllers="steward,keda,static", duration_h=0.05,
                       rate_scale=0.3, seeds=2, jobs=jobs)  # fmt: skip
        return _without_timings(result.figures())

    alone, parallel = figures(1), figures(2)
    assert list(parallel["controllers"]) == ["steward", "keda", "static"]
    assert parallel == alone


def test_the_calibration_gives_the_scale_of_one_process() -> None:
    # Its first two runs (the load almost empty, and as given) run at once with jobs > 1.
    train = prepared("flash", 600, seed=1000)
    alone, parallel = calibrated(train, 1), calibrated(train, 2)
    assert parallel.rate_scale == alone.rate_scale
    assert alone.rate_scale != train.rate_scale  # the bisection ran: the scale was lowered
