"""A long action never blocks the loop: a 10-minute drain runs across ticks while the loop goes on.

The drain is proposed once by a planner that otherwise defers to the rules; its decision suspends
while the node empties (tools/suspend.py), ticks keep coming at their interval, /healthz answers
200 after every one of them, other decisions are made meanwhile, and the drain's outcome lands in
the decision log when it is done.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from agent.daemon.runtime import Runtime
from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from policies.loader import load_policy
from tests.loop.conftest import DATA
from tools.actions import DrainNode, Plan
from tools.model import ClusterState

POLICY = DATA / "drain-free.yaml"
INTERVAL_S = 15.0
DEADLINE_S = 600.0


class DrainOnce:
    """Proposes one 10-minute drain of render-1, then plans as the rules do."""

    name = "drain-once"

    def __init__(self, rules: RulesPlanner) -> None:
        self.rules = rules
        self.proposed = False

    def plan(self, state: ClusterState, signals: object) -> Plan:
        if self.proposed:
            return self.rules.plan(state, signals)
        self.proposed = True
        drain = DrainNode(node="render-1", deadline_s=DEADLINE_S, reason="maintenance window")
        return Plan(actions=(drain,), rationale="drain render-1 for maintenance", planner=self.name)


def _healthz(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        json.loads(answer.read())
        return int(answer.status)


def test_a_ten_minute_drain_does_not_hold_the_loop(tmp_path: Path) -> None:
    # Long answers keep burst-llm's replica on render-1 serving: it takes the whole deadline to go.
    scenario = Scenario(
        name="long-drain",
        replicas={"burst-llm": 1},
        demand=[PoissonDemand(target="burst-llm", rate_per_min=6, output_tokens=20_000)],
    )
    sim = SimCluster.open(tmp_path, scenario)
    policy = load_policy(POLICY)
    planner = DrainOnce(RulesPlanner(RulesSettings.from_policy(policy)))
    with Runtime.open(tmp_path, sim, policy, planner=planner) as runtime:
        runtime.start()
        server = runtime.ctx.telemetry.serve(0)
        port = server.server_address[1]
        first = runtime.tick(INTERVAL_S)
        while not planner.proposed:  # the planner is asked once something needs deciding
            first = runtime.tick(INTERVAL_S)
            assert first.tick < 60, "nothing asked for a decision"
        assert first.actions == ("drain render-1",) or first.actions, first
        assert first.in_progress == (first.decision_id,), (first, "the drain suspends")
        drain_id = first.decision_id
        started = runtime.world.now  # type: ignore[attr-defined]
        others: list[str] = []
        ticks = 1
        while drain_id in runtime.in_progress:
            report = runtime.tick(INTERVAL_S)
            ticks += 1
            assert report.decision_id != drain_id
            others.append(report.decision_id)
            assert _healthz(port) == 200
            assert ticks < 200, "the drain never ended"
        server.shutdown()
        took = (runtime.world.now - started).total_seconds()  # type: ignore[attr-defined]
        executed = runtime.ctx.audit.executed_actions(started.replace(year=2000))
    # Ticks kept their interval: the simulated clock moved only by them, one interval each.
    assert ticks >= 3 and len(set(others)) == len(others)
    assert took == (ticks - 1) * INTERVAL_S
    assert took >= DEADLINE_S, "requests in flight held the drain to its deadline"
    drains = [e for e in executed if isinstance(e.action, DrainNode)]
    assert len(drains) == 1 and drains[0].ok
    state = sim.observe()
    node = state.node("render-1")
    assert node is not None and node.cordoned
    assert not [w for w in state.workloads for r in w.placement if "render-1" in r.nodes]
