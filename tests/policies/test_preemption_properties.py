"""Preemption by priority keeps every invariant: generated lending situations — a lower pool on a
node's cards, a higher pool with or without queued demand — varied policies and histories, and
plans built around the preemption pair with noise around it.

The broad property test (test_properties) rarely draws a state where a preemption can pass; this
one draws such states on purpose (permissive choices first), so that every run both grants and
withdraws the preemption many times. 1,000 examples of 5 plans: 5,000 plans here, on top of the
10,000 of test_properties (whose plans now carry preemption-shaped pairs too).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.engine import judge
from policies.history import History
from policies.model import (
    Approvers,
    Budget,
    ChangeBudget,
    Cooldowns,
    Group,
    Policy,
    PoolPolicy,
    SloTarget,
)
from policies.rules.priority import PRIORITY_PREEMPTION
from tests.policies.invariants import check_applied
from tools.actions import Action, NoOp, PlaceReplica, Plan, ScaleWorkload
from tools.model import ClusterState, Gpu, Metric, Node, Pool, ReplicaPlacement, Workload

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
SEEN: dict[str, int] = {"plans": 0, "preempted": 0, "withdrawn": 0}


def _fresh(value: float) -> Metric:
    return Metric.fresh(value, T0, "test")


QUEUE = st.one_of(
    st.integers(0, 6).map(lambda v: _fresh(float(v))),
    st.just(Metric()),
    st.integers(1, 6).map(lambda v: Metric(value=v, status="stale", observed_at=T0, source="t")),
)
DEMAND = st.sampled_from(
    [
        *(_fresh(float(v)) for v in (1, 2, 3, 5, 8)),
        _fresh(0.0),
        Metric(value=3, status="stale", observed_at=T0, source="t"),
        Metric(),
    ]
)
"""The taker's queue: mostly fresh demand, sometimes none, stale or missing."""
WAIT = st.integers(0, 200).map(lambda v: _fresh(float(v)))
MINUTES = st.integers(0, 20).map(lambda m: timedelta(minutes=m))


@st.composite
def lending(draw: st.DrawFn) -> ClusterState:
    cards = draw(st.integers(2, 4))
    util = draw(st.sampled_from([97.0, 60.0, 3.0, 0.0]))
    gpus = tuple(
        Gpu(uuid=f"g{i}", index=i, model="A", node="r", utilization=_fresh(util))
        for i in range(cards)
    )
    node = Node(name="r", labels={"box": "r"}, memory_total_bytes=1 << 30, gpus=gpus,
                cordoned=draw(st.booleans()) and draw(st.booleans()))  # fmt: skip
    lent = draw(st.integers(1, cards))
    lender = Workload(
        name="lender", kind="inference", pool="low", desired_replicas=lent, ready_replicas=lent,
        queue_depth=draw(QUEUE), queue_wait_s=draw(WAIT),
        placement=tuple(ReplicaPlacement(index=i, nodes=("r",), gpus=(f"g{i}",), ready=True)
                        for i in range(lent)),
    )  # fmt: skip
    taker_cards = draw(st.integers(1, 2))
    taker = Workload(
        name="taker", kind="render", pool="high", desired_replicas=draw(st.integers(0, 1)),
        ready_replicas=0, cards_per_replica=taker_cards, queue_depth=draw(DEMAND),
        queue_wait_s=draw(WAIT),
    )  # fmt: skip
    pools = (
        Pool(name="low", workloads=("lender",), node_selector={"box": "r"}),
        Pool(name="high", workloads=("taker",), node_selector={"box": "r"}),
    )
    return ClusterState(observed_at=T0, nodes=(node,), workloads=(lender, taker), pools=pools)


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    def pool(priorities: list[int]) -> PoolPolicy:
        low = draw(st.sampled_from([0, 1]))
        high = low + draw(st.sampled_from([4, 2, 1, 0]))
        return PoolPolicy(
            min_cards=low, max_cards=high, priority=draw(st.sampled_from(priorities)),
            idle_before_zero=draw(st.sampled_from([timedelta(minutes=10), None, timedelta(0)])),
            min_ready_replicas=draw(st.sampled_from([0, 1])) if high else 0,
        )  # fmt: skip

    pools = {"low": pool([20, 0]), "high": pool([60, 20])}  # mostly, not always, higher
    floor = sum(p.min_cards for p in pools.values())
    total = draw(st.sampled_from([None, 4, 2, 1, 0]))
    return Policy(
        pools=pools,
        budget=Budget(total_cards=None if total is None else floor + total),
        protected=draw(st.sampled_from([(), (), (), ("lender",)])),
        cooldowns=Cooldowns(by_action=draw(st.sampled_from(
            [{}, {"scale_workload": timedelta(minutes=2)}, {"place_replica": timedelta(minutes=5)}]
        ))),
        change_budget=ChangeBudget(actions_per_hour=draw(st.sampled_from([None, 6, 2, 1, 0])),
                                   cards_per_tick=draw(st.sampled_from([None, 6, 4, 2, 0]))),
        slo={p: SloTarget(queue_wait_s=draw(st.sampled_from([30, 120, 1]))) for p in ("low", "high")
             if draw(st.booleans())},
        approvers=Approvers(groups={"ops": Group(members=("ana",))}),
    )  # fmt: skip


SCALE = st.builds(
    ScaleWorkload, workload=st.sampled_from(["lender", "taker"]), replicas=st.integers(0, 5)
)
NOISE: st.SearchStrategy[Action] = st.one_of(
    SCALE,
    st.builds(PlaceReplica, workload=st.sampled_from(["lender", "taker"]), node=st.just("r")),
    st.just(NoOp(reason="hold")),
)


@st.composite
def plans(draw: st.DrawFn, state: ClusterState) -> Plan:
    lent, wanted = state.workloads[0].desired_replicas, state.workloads[1].desired_replicas
    down = ScaleWorkload(
        workload="lender", replicas=max(0, lent - draw(st.sampled_from([1, 2, 0])))
    )
    up: Action = draw(
        st.one_of(
            st.builds(ScaleWorkload, workload=st.just("taker"),
                      replicas=st.integers(1, 2).map(lambda k: wanted + k)),
            st.just(PlaceReplica(workload="taker", node="r")),
        )
    )  # fmt: skip
    before = draw(st.lists(NOISE, max_size=1)) if draw(st.booleans()) else []
    between = draw(st.lists(NOISE, max_size=1)) if draw(st.booleans()) else []
    return Plan(actions=(*before, down, *between, up))


@st.composite
def histories(draw: st.DrawFn, state: ClusterState, policy: Policy) -> History:
    history = History()
    if draw(st.booleans()):
        since = draw(MINUTES)
        start = ClusterState.model_validate(
            {**{f: getattr(state, f) for f in ClusterState.model_fields},
             "observed_at": T0 - since}
        )  # fmt: skip
        history = history.observed(start, policy).observed(state, policy)
    for action in draw(st.lists(SCALE, max_size=1)):
        history = history.record(action, T0 - draw(MINUTES))
    return history


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    state, policy = draw(lending()), draw(policies())
    return {"state": state, "policy": policy, "history": draw(histories(state, policy)),
            "plans": draw(st.lists(plans(state), min_size=5, max_size=5))}  # fmt: skip


@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(cases())
def _every_preemption_keeps_the_invariants(case: dict[str, Any]) -> None:
    state, policy, history = case["state"], case["policy"], case["history"]
    for plan in case["plans"]:
        judgement = judge(plan, state, policy, history, T0)
        SEEN["plans"] += 1
        for verdict in judgement.verdicts:
            if PRIORITY_PREEMPTION not in verdict.rule_ids:
                continue
            SEEN["preempted"] += 1
            assert verdict.decision == "allow"
            lender = state.workload(verdict.action.target)
            assert lender is not None
            later = judgement.verdicts[verdict.index + 1 :]
            takers = [v for v in later if v.action.target == "taker" and v.decision == "allow"]
            assert takers, judgement.verdicts
            assert policy.pools["high"].priority > policy.pools["low"].priority
            depth = state.workloads[1].queue_depth
            assert depth.usable and (depth.value or 0) > 0
        SEEN["withdrawn"] += sum(1 for f in judgement.findings if f.rule_id == PRIORITY_PREEMPTION)
        allowed = [v.action for v in judgement.verdicts if v.decision == "allow"]
        waiting = [v.action for v in judgement.verdicts if v.decision != "deny"]
        for subset in (allowed, waiting):
            broken = check_applied(subset, state, policy, history, T0)
            assert not broken, (broken, plan, judgement.verdicts)


def test_every_preemption_keeps_the_invariants() -> None:
    SEEN.update(plans=0, preempted=0, withdrawn=0)
    _every_preemption_keeps_the_invariants()
    assert SEEN["plans"] >= 5000
    # The generator is aimed at the rule: it must both grant and withdraw preemptions often.
    assert SEEN["preempted"] >= 50, SEEN
    assert SEEN["withdrawn"] >= 50, SEEN
