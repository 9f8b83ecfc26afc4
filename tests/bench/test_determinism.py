"""Same load, seed and controller: the same figures; another seed: other arrivals."""

from __future__ import annotations

from lab.bench.trace.figures import Figures
from tests.bench.conftest import prepared, run

WALL_CLOCK = {"median_ms", "p99_ms"}
"""The controllers' own decision times are measured on the wall clock: the only figures that
differ between two runs of the same replay."""


def _figures(trace: str, seed: int, name: str) -> dict[str, object]:
    f: Figures = run(prepared(trace, 360, seed=seed), name).figures
    return {k: v for k, v in f.model_dump().items() if k not in WALL_CLOCK}


def test_the_same_replay_gives_the_same_figures() -> None:
    for name in ("steward", "keda", "dynamo"):
        assert _figures("azure-code", 3, name) == _figures("azure-code", 3, name), name


def test_another_seed_gives_other_arrivals() -> None:
    # The sinusoid's Poisson arrivals, the capacity factors and the load times depend on the seed.
    assert _figures("sinusoid", 1, "keda") != _figures("sinusoid", 2, "keda")
