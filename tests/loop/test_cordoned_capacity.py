"""A cordon that holds room back is never a silent stall: Steward lifts a cordon of its own when
it needs the capacity again, and names a person's cordon as the finding cordoned_capacity
instead of deciding nothing, without a word, for ever."""

from __future__ import annotations

from pathlib import Path

from agent.audit import FindingChange, Intent
from agent.daemon.runtime import Runtime
from lab.sim import control
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from policies.loader import DEFAULT_POLICY, load_policy

BURST = Scenario(
    name="burst-behind-a-cordon",
    replicas={"render": 0, "burst-llm": 0},
    demand=(PoissonDemand(target="burst-llm", rate_per_min=30),),
)


def _run(data_dir: Path, *, by_steward: bool, ticks: int) -> tuple[Runtime, SimCluster]:
    sim = SimCluster.open(data_dir, BURST)
    control.set_cordon(sim.engine, "render-1", True, False, by_steward=by_steward)
    runtime = Runtime.open(data_dir, sim, load_policy(DEFAULT_POLICY))
    runtime.start()
    for _ in range(ticks):
        runtime.tick(15.0)
    return runtime, sim


def test_a_persons_cordon_is_named_as_cordoned_capacity(data_dir: Path) -> None:
    runtime, sim = _run(data_dir, by_steward=False, ticks=8)
    try:
        records = runtime.ctx.audit.records()
    finally:
        runtime.close()

    state = sim.observe()
    node = state.node("render-1")
    assert node is not None and node.cordoned and not node.cordoned_by_steward
    burst = state.workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 0  # no uncordon, no placement
    found = [
        r.payload
        for r in records
        if isinstance(r.payload, FindingChange) and r.payload.finding == "cordoned_capacity"
    ]
    assert [(f.key, f.status) for f in found] == [("cordoned_capacity:render-1", "appeared")]
    assert found[0].text.startswith("render-1: cordoned by a person, and burst-llm find(s) room")
    assert "lifting a person's cordon needs a person" in found[0].text


def test_steward_lifts_its_own_cordon_when_it_needs_the_room(data_dir: Path) -> None:
    runtime, sim = _run(data_dir, by_steward=True, ticks=8)
    try:
        intents = [r.payload for r in runtime.ctx.audit.records() if isinstance(r.payload, Intent)]
    finally:
        runtime.close()

    proposed = [(p.action.describe(), p.verdict) for i in intents for p in i.proposals]
    assert ("uncordon render-1", "allow") in proposed
    state = sim.observe()
    node = state.node("render-1")
    assert node is not None and not node.cordoned
    burst = state.workload("burst-llm")
    assert burst is not None and burst.desired_replicas >= 1
    assert any(r.nodes == ("render-1",) for r in burst.placement)
