"""Pools go to zero after their idle time, come back on the first request, and lend their cards.

The burst pool (idle_before_zero 5m in the default policy) borrows render-1's cards while nobody
renders; once its demand stops it goes to zero — not before its idle time — and the first
queued request brings it back.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from agent.audit import Intent
from lab.sim.demand import BurstDemand
from lab.sim.scenario import Scenario
from tests.loop.conftest import open_runtime

BURSTS = Scenario(
    name="two-bursts",
    replicas={"render": 0, "burst-llm": 0},
    demand=(
        BurstDemand(target="burst-llm", rate_per_min=30, at_s=30, duration_s=300),
        BurstDemand(target="burst-llm", rate_per_min=30, at_s=1800, duration_s=300),
    ),
)


def test_idle_pool_goes_to_zero_after_its_idle_time_and_returns(data_dir: Path) -> None:
    with open_runtime(data_dir, BURSTS) as runtime:
        reports = [runtime.tick(15.0) for _ in range(150)]
        records = runtime.ctx.audit.records(kind="intent")
    to_zero = [r for r in reports if any(a == "scale burst-llm to 0 replica(s)" for a in r.actions)]
    assert to_zero, "the burst pool never went to zero"
    zero_at = to_zero[0]
    # The last request of the first burst arrived before 330 s; idle time is five minutes.
    intents = {r.payload.decision_id: r.payload for r in records if isinstance(r.payload, Intent)}
    zeroed = intents[zero_at.decision_id]
    start = runtime.world.scenario.start
    assert zeroed.observed_at - start >= timedelta(seconds=330 + 300)
    back = [
        r
        for r in reports
        if r.tick > zero_at.tick
        and any(a.startswith("place a replica of burst-llm") for a in r.actions)
    ]
    assert back, "the burst pool did not come back on the second burst"
    assert back[0].executed == 1
    back_at = intents[back[0].decision_id].observed_at - start
    assert timedelta(seconds=1800) <= back_at <= timedelta(seconds=1800 + 45)


HEAVY = Scenario(
    name="heavy",
    replicas={"render": 0, "burst-llm": 0},
    demand=(BurstDemand(target="burst-llm", rate_per_min=120, at_s=0, duration_s=3600),),
)


def test_burst_borrows_the_render_cards_while_nobody_renders(data_dir: Path) -> None:
    with open_runtime(data_dir, HEAVY) as runtime:
        for _ in range(12):
            runtime.tick(15.0)
        state = runtime.ctx.cluster.observe()
    burst = state.workload("burst-llm")
    render_node = state.node("render-1")
    assert burst is not None and render_node is not None
    assert burst.desired_replicas == 2
    used = {g for r in burst.placement for g in r.gpus}
    assert used == {g.uuid for g in render_node.gpus}
