"""A rotation on a healthy pair commits: drain, switch, probe, commit — in an order that never
puts two models on one node's memory, with capacity at zero only inside the declared window,
every step in the journal, and in well under twice the model-load time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.sim.backend import SimCluster
from tests.modes.conftest import (
    POLICY_LIMITS,
    ModeName,
    busy_homelab,
    saga,
    serving,
    zero_capacity_outside,
)
from tools.backends.base import ActionResult
from tools.modes import FORWARD, Journal, RotationSettings

LOAD_S = {"split": 180.0, "cluster": 240.0}
"""The slowest model load of each mode in the homelab profile (lab/sim/profiles.py)."""


class WatchedCluster(SimCluster):
    """The real simulator, noting at each scale-up which workloads hold memory on a live node."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.overlaps: list[str] = []

    def scale(self, workload: str, replicas: int, *, dry_run: bool = False) -> ActionResult:
        state = self.observe()
        target = state.workload(workload)
        if target is not None and replicas > target.desired_replicas:
            mode = next(m for m in state.modes if workload in m.workloads)
            for other in state.workloads:
                if other.name in mode.workloads or other.pool != "gx10":
                    continue
                if any(r.nodes for r in other.placement):
                    self.overlaps.append(f"{workload} started while {other.name} held memory")
        return super().scale(workload, replicas, dry_run=dry_run)


def watched(mode: ModeName) -> WatchedCluster:
    sim = busy_homelab(mode, cls=WatchedCluster)
    assert isinstance(sim, WatchedCluster)
    return sim


@pytest.mark.parametrize(("start", "target"), [("cluster", "split"), ("split", "cluster")])
def test_a_healthy_rotation_commits(start: ModeName, target: ModeName, data_dir: Path) -> None:
    sim = watched(start)
    outcome = saga(sim, data_dir).rotate(target)

    assert outcome.result == "committed", outcome.message
    assert outcome.final_mode == target and not outcome.degraded
    state = sim.observe()
    assert state.active_mode is not None and state.active_mode.name == target
    assert all(p.ok for p in outcome.probes) and len(outcome.probes) == len(outcome.serving)
    assert sim.overlaps == []
    assert zero_capacity_outside(sim, outcome) == []
    assert set(serving(sim)) == set(outcome.serving)
    assert outcome.duration_s <= 2 * LOAD_S[target]


def test_the_journal_shows_every_step_in_order(data_dir: Path) -> None:
    sim = busy_homelab("cluster")
    outcome = saga(sim, data_dir).rotate("split")
    (txn,) = Journal.open(data_dir).transactions()
    steps = [(e.kind, e.step, e.status) for e in txn.entries]
    expected = [("begin", None, None)]
    for step in FORWARD:
        expected += [("step", step, "started"), ("step", step, "done")]
    assert steps == [*expected, ("end", None, None)]
    assert txn.entries[-1].result == "committed"
    assert txn.txn == outcome.txn
    assert outcome.window_opened_at == txn.entries[3].at  # drain started


def test_requests_in_flight_at_the_drain_deadline_are_counted(data_dir: Path) -> None:
    sim = busy_homelab("cluster", rate_per_min=30)
    settings = RotationSettings(limits=POLICY_LIMITS, drain_deadline_s=5, drain_max_s=5)
    outcome = saga(sim, data_dir, settings).rotate("split")
    assert outcome.result == "committed"
    assert outcome.aborted_requests > 0
    drained = [e for e in Journal.open(data_dir).entries() if e.step == "drain" and e.detail]
    assert drained[-1].detail["aborted"] == outcome.aborted_requests


def test_the_same_decision_never_rotates_twice(data_dir: Path) -> None:
    sim = busy_homelab("cluster")
    rotation = saga(sim, data_dir)
    first = rotation.rotate("split", decision_id="d-000000000001")
    again = rotation.rotate("split", decision_id="d-000000000001")
    assert again.txn == first.txn and again.result == "committed"
    assert len(Journal.open(data_dir).transactions()) == 1


def test_rotating_to_the_active_mode_changes_nothing(data_dir: Path) -> None:
    sim = busy_homelab("split")
    outcome = saga(sim, data_dir).rotate("split")
    assert outcome.result == "refused"
    assert "already active" in outcome.message
    assert outcome.window_opened_at is None
    assert set(serving(sim)) == {"resident-a", "resident-b"}


def test_the_watch_sees_a_scale_up_over_held_memory() -> None:
    sim = watched("cluster")
    refused = sim.scale("resident-a", 1)
    assert not refused.ok
    assert sim.overlaps == ["resident-a started while beast held memory"]
