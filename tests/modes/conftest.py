"""Shared set-up for the mode-rotation tests: a simulated homelab with traffic, and its saga."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pytest

from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from tools.errors import TemporaryError
from tools.modes import (
    Journal,
    PreflightLimits,
    Rotation,
    RotationOutcome,
    RotationSettings,
    VirtualClock,
    placement_fit,
)

ModeName = Literal["split", "cluster"]
MODE_WORKLOADS = ("resident-a", "resident-b", "beast")
POLICY_LIMITS = PreflightLimits(link_min_fraction=0.4, expected_gid_index=3)
"""policies/default.yaml's rotation preconditions."""


def busy_homelab(
    mode: ModeName = "cluster",
    seed: int = 3,
    rate_per_min: float = 12,
    cls: type[SimCluster] = SimCluster,
) -> SimCluster:
    """The homelab in `mode`, serving a steady stream on the gx10 pool, two minutes in."""
    demand = PoissonDemand(
        target="gx10", rate_per_min=rate_per_min, input_tokens=1500, output_tokens=300
    )
    sim = cls.from_scenario(Scenario(seed=seed, mode=mode, demand=(demand,)))
    sim.advance(120)
    return sim


def saga(sim: SimCluster, data_dir: Path, settings: RotationSettings | None = None) -> Rotation:
    """The rotation over `sim`, journalled in `data_dir`, with the default policy's limits."""
    return Rotation(
        sim,
        Journal.open(data_dir),
        clock=VirtualClock(sim),
        fit=placement_fit,
        settings=settings or RotationSettings(limits=POLICY_LIMITS),
        persist=lambda: sim.save(data_dir),
    )


def zero_capacity_outside(sim: SimCluster, outcome: RotationOutcome) -> list[str]:
    """Series points with no ready replica of any mode workload, outside the switch window."""
    ready: dict[datetime, int] = {}
    for p in sim.series().points:
        if p.workload in MODE_WORKLOADS:
            ready[p.at] = ready.get(p.at, 0) + p.ready_replicas
    opened = outcome.window_opened_at or datetime.max.replace(tzinfo=UTC)
    closed = outcome.window_closed_at or datetime.min.replace(tzinfo=UTC)
    return [str(at) for at, n in ready.items() if n == 0 and not opened <= at <= closed]


def serving(sim: SimCluster) -> list[str]:
    """Mode workloads that answer a real probe now (transient API errors retried)."""
    return [w for w in MODE_WORKLOADS if _probe_ok(sim, w)]


def _probe_ok(sim: SimCluster, workload: str) -> bool:
    for _ in range(10):
        try:
            return sim.probe(workload).ok
        except TemporaryError:
            continue
    raise AssertionError(f"the probe of {workload} kept failing transiently")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"
