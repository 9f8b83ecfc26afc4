"""The GX10 pair's memory is exclusive: `beast` and the residents cannot all be up at once.

Mode rotation itself is composed elsewhere (tools/modes.py); these tests walk the primitives the
way it does and check what the simulator enforces: memory, start-up delay, drain, the active mode.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from lab.sim.backend import SimCluster
from lab.sim.scenario import Scenario
from tests.sim.conftest import steady
from tools.errors import InvalidInput


def test_a_resident_does_not_fit_beside_the_cluster_model() -> None:
    sim = SimCluster.homelab()
    result = sim.scale("resident-a", 1)
    assert not result.ok and not result.changed
    assert "gx10-a" in result.message and "beast/0" in result.message
    assert sim.observe().workload("resident-a").desired_replicas == 0  # type: ignore[union-attr]


def test_rotation_from_cluster_to_split_through_the_primitives() -> None:
    sim = SimCluster.from_scenario(steady("gx10", 6))
    assert sim.observe().active_mode.name == "cluster"  # type: ignore[union-attr]
    sim.advance(60)
    assert sim.set_accepting("beast", False).changed
    for node in ("gx10-a", "gx10-b"):
        drained = sim.drain(node, deadline_s=120)
        assert drained.ok and drained.outcome in ("drained", "deadline")
    assert sim.scale("beast", 0).ok
    assert sim.observe().active_mode is None
    # The memory is free only once beast's process has exited.
    for node in ("gx10-a", "gx10-b"):
        assert sim.uncordon(node).ok
    sim.advance(30)
    assert sim.scale("resident-a", 1).ok
    assert sim.scale("resident-b", 1).ok
    started = sim.now
    assert sim.observe().active_mode is None  # loading the models
    sim.advance(200)
    state = sim.observe()
    assert state.active_mode is not None and state.active_mode.name == "split"
    assert state.active_mode.since - started >= timedelta(seconds=170)  # model load time
    assert sim.probe("resident-a").tokens_per_s == pytest.approx(20.3)
    assert sim.probe("resident-b").context_length == 262_144
    assert sim.scale("beast", 1).ok is False


def test_drain_waits_for_in_flight_work_and_aborts_at_the_deadline() -> None:
    sim = SimCluster.from_scenario(steady("beast", 30, out=2000))
    sim.advance(120)
    assert sim.in_flight("beast") > 0
    started = sim.now
    result = sim.drain("gx10-a", deadline_s=10)
    assert result.outcome == "deadline" and result.in_flight_aborted > 0
    assert (sim.now - started).total_seconds() >= 10
    assert sim.observe().node("gx10-a").cordoned  # type: ignore[union-attr]
    assert sim.observe().workload("beast").ready_replicas == 0  # type: ignore[union-attr]


def test_dry_run_changes_nothing() -> None:
    sim = SimCluster.homelab()
    before = sim.observe()
    assert sim.scale("beast", 0, dry_run=True).dry_run
    assert sim.drain("gx10-a", 60, dry_run=True).dry_run
    assert sim.cordon("render-1", dry_run=True).ok
    assert sim.place("render", "render-1", dry_run=True).ok
    assert sim.observe() == before


def test_scale_from_zero_starts_after_its_load_time() -> None:
    sim = SimCluster.homelab()
    assert sim.scale("burst-llm", 1).ok
    sim.advance(60)
    assert sim.observe().workload("burst-llm").ready_replicas == 0  # type: ignore[union-attr]
    sim.advance(31)
    assert sim.observe().workload("burst-llm").ready_replicas == 1  # type: ignore[union-attr]
    # Render wants both cards of render-1, burst-llm holds one: it must wait.
    refused = sim.scale("render", 1)
    assert not refused.ok and "burst-llm/0" in refused.message


def test_a_scenario_asking_for_both_modes_is_refused() -> None:
    with pytest.raises(InvalidInput, match="beast"):
        SimCluster.from_scenario(Scenario(mode="split", replicas={"beast": 1}))


def test_names_that_do_not_exist_are_bad_input() -> None:
    sim = SimCluster.homelab()
    with pytest.raises(InvalidInput, match="no workload named 'nope'"):
        sim.scale("nope", 1)
    with pytest.raises(InvalidInput, match="no node named"):
        sim.cordon("gx10-z")
