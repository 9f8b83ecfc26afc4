"""A scale-up nothing can place is released, not left pending forever (the trap of an
autoscaler that counts an unschedulable replica as capacity on its way)."""

from __future__ import annotations

from datetime import timedelta

from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.signals.assess import assess
from agent.signals.memory import Memory
from lab.sim.backend import SimCluster
from policies.engine import judge
from policies.history import History
from policies.loader import load_default_policy
from tools.actions import Plan, ScaleWorkload
from tools.model import ClusterState, ReplicaPlacement

POLICY = load_default_policy()
SETTINGS = RulesSettings.from_policy(POLICY)
BASE = SimCluster.homelab(seed=0).observe()


def with_waiting(seconds: float, name: str = "burst-llm") -> ClusterState:
    """The workload asks for one replica more than it has, waiting `seconds` for a node."""
    burst = BASE.workload(name)
    assert burst is not None
    waiting = ReplicaPlacement(
        index=burst.desired_replicas,
        nodes=(),
        waiting_since=BASE.observed_at - timedelta(seconds=seconds),
    )
    changed = burst.model_copy(
        update={
            "desired_replicas": burst.desired_replicas + 1,
            "placement": (*burst.placement, waiting),
        }
    )
    workloads = tuple(changed if w.name == name else w for w in BASE.workloads)
    return BASE.model_copy(update={"workloads": workloads})


def plan_for(state: ClusterState, name: str = "burst-llm") -> list[ScaleWorkload]:
    signals, _ = assess(state, Memory(), SETTINGS.assess, POLICY)
    plan = RulesPlanner(SETTINGS).plan(state, signals)
    return [a for a in plan.actions if isinstance(a, ScaleWorkload) and a.workload == name]


def test_a_replica_pending_past_the_release_time_is_given_back() -> None:
    state = with_waiting(SETTINGS.assess.pending_release_s + 30)
    (release,) = plan_for(state)
    burst = state.workload("burst-llm")
    assert burst is not None and release.replicas == burst.desired_replicas - 1
    assert "found no node to run on for 330 s" in release.reason


def test_the_release_goes_through_the_guard() -> None:
    """worker keeps its running replica and gives back the one that found no room; the
    guard allows it. Taking a pool to zero this way is the guard's to judge like any other
    scale to zero (pool.idle_before_zero holds a pool not yet watched idle)."""
    state = with_waiting(400, "worker")
    (release,) = plan_for(state, "worker")
    assert release.replicas == 1
    (verdict,) = judge(Plan(actions=(release,)), state, POLICY, History()).verdicts
    assert verdict.decision == "allow", verdict.message
    burst = with_waiting(400)
    (to_zero,) = plan_for(burst)
    (held,) = judge(Plan(actions=(to_zero,)), burst, POLICY, History()).verdicts
    assert held.rule_ids == ("pool.idle_before_zero",)


def test_a_replica_waiting_a_little_is_left_to_the_scheduler() -> None:
    assert plan_for(with_waiting(60)) == []


def test_a_replica_waiting_for_a_lost_node_is_not_released() -> None:
    """ws-1 lost: worker's replica waits for it to come back — not a want of room."""
    state = with_waiting(400, "worker")
    nodes = tuple(n.model_copy(update={"ready": n.name != "ws-1"}) for n in state.nodes)
    assert plan_for(state.model_copy(update={"nodes": nodes}), "worker") == []
