"""Shared helpers for the simulator's tests: the trace path and small scenario builders."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from lab.sim.demand import PoissonDemand, TraceDemand
from lab.sim.scenario import Scenario

TRACES = Path(__file__).resolve().parents[2] / "lab" / "traces"
CONV = TRACES / "azure-2023-conv.csv"


@pytest.fixture
def conv_trace() -> Path:
    if not CONV.is_file():
        pytest.fail(f"the Azure conversation trace is expected at {CONV}")
    return CONV


Mode = Literal["split", "cluster"]


def replay(mode: Mode, trace: Path, rate_scale: float, seed: int = 7) -> Scenario:
    """The conversation trace on the gx10 pool in `mode`."""
    demand = TraceDemand(target="gx10", path=trace, rate_scale=rate_scale)
    return Scenario(seed=seed, mode=mode, demand=(demand,))


def steady(
    target: str, rate_per_min: float, *, mode: Mode = "cluster", inp: int = 1000, out: int = 250
) -> Scenario:
    demand = PoissonDemand(
        target=target, rate_per_min=rate_per_min, input_tokens=inp, output_tokens=out
    )
    return Scenario(seed=1, mode=mode, demand=(demand,))
