"""Properties of the rules planner over generated homelab states (hypothesis).

Whatever the queues, waits, replica counts and metric freshness: it never touches a workload it
cannot read, never proposes a pool outside its limits, never scales a mode's workloads (only a
rotation moves them), and the same input always gives the same plan.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.signals.assess import assess
from agent.signals.memory import Memory, WorkloadMemory
from lab.sim.backend import SimCluster
from policies.loader import load_default_policy
from tools.actions import PlaceReplica, RotateMode, ScaleWorkload
from tools.model import ClusterState, Metric

POLICY = load_default_policy()
SETTINGS = RulesSettings.from_policy(POLICY)
BASE = SimCluster.homelab(seed=0).observe()
QUEUED = [w.name for w in BASE.workloads if w.kind in ("inference", "tts")]
IN_MODES = {w for m in BASE.modes for w in m.workloads}

reading = st.one_of(
    st.none(),  # missing
    st.tuples(st.sampled_from([0, 0, 0, 1, 4, 12, 70, 400]), st.booleans()),  # value, stale?
)


@st.composite
def memories(draw: st.DrawFn) -> Memory:
    """The loop's memory after some while: pools watched, queues calm for a time."""
    now = BASE.observed_at
    ago = st.integers(0, 3600).map(lambda s: now - timedelta(seconds=s))
    calm = {w: WorkloadMemory(calm_since=draw(st.none() | ago)) for w in QUEUED}
    return Memory(workloads=calm, watching_since=draw(ago))


@st.composite
def states(draw: st.DrawFn) -> ClusterState:
    now = BASE.observed_at
    workloads = []
    for w in BASE.workloads:
        update: dict[str, object] = {}
        if w.name in QUEUED and w.name not in IN_MODES:
            desired = draw(st.integers(0, 2))
            update["desired_replicas"] = desired
            update["ready_replicas"] = draw(st.integers(0, desired))
        for field in ("queue_depth", "queue_wait_s"):
            if w.name in QUEUED:
                got = draw(reading)
                if got is None:
                    update[field] = Metric.missing("gateway")
                else:
                    value, stale = got
                    at = now - timedelta(minutes=10) if stale else now
                    update[field] = Metric.fresh(value, at, "gateway")
        workloads.append(w.model_copy(update=update))
    return ClusterState.model_validate({**BASE.model_dump(), "workloads": workloads})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(states(), memories())
def test_the_rules_planner_keeps_to_what_it_can_read_and_to_the_limits(
    state: ClusterState, memory: Memory
) -> None:
    signals, _ = assess(state, memory, SETTINGS.assess, POLICY)
    plan = RulesPlanner(SETTINGS).plan(state, signals)
    assert plan == RulesPlanner(SETTINGS).plan(state, signals)
    cards = {p: state.pool_cards(p) for p in POLICY.pools}
    for action in plan.actions:
        if isinstance(action, RotateMode):
            continue
        assert isinstance(action, ScaleWorkload | PlaceReplica)
        assert action.workload not in IN_MODES
        signal = signals.workload(action.workload)
        assert signal is not None and not signal.stale
        workload = state.workload(action.workload)
        assert workload is not None
        if isinstance(action, ScaleWorkload):
            # Down, or up by the replicas its queue asks for (sized): never "no change".
            assert action.replicas != workload.desired_replicas
            cards[workload.pool] += (action.replicas - workload.desired_replicas) * (
                workload.cards_per_replica
            )
        else:
            cards[workload.pool] += workload.cards_per_replica
    for pool, count in cards.items():
        limits = POLICY.pools[pool]
        touched = any(
            isinstance(a, ScaleWorkload | PlaceReplica)
            and (w := state.workload(a.workload)) is not None
            and w.pool == pool
            for a in plan.actions
        )
        if touched:
            assert count <= limits.max_cards, (pool, count, plan)
            assert count >= min(limits.min_cards, state.pool_cards(pool)), (pool, count, plan)
