"""Hypothesis strategies: small cluster states, policies, histories and plans — absurd ones too.

Names come from small sets so that plans hit the same targets often (duplicates, conflicts), and
a few names exist nowhere (unknown targets). Hostile actions (negative, fractional or huge
replica counts) are built with `model_construct`, as a planner bypassing validation would.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from policies.history import History
from policies.model import (
    ApprovalRule,
    Approvers,
    Budget,
    ChangeBudget,
    Cooldowns,
    Group,
    Policy,
    PoolPolicy,
    QuietWindow,
    Rotation,
    SloTarget,
    Window,
)
from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    NoOp,
    PlaceReplica,
    Plan,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)
from tools.model import (
    ActiveMode,
    ClusterState,
    Gpu,
    Link,
    LinkPath,
    Metric,
    Mode,
    Node,
    ReplicaPlacement,
    Workload,
)

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
NODES = ("n0", "n1", "n2", "n3")
WORKLOADS = ("w0", "w1", "w2", "w3", "w4")
POOLS = ("p0", "p1", "p2")
MODES = ("m0", "m1")
MODELS = ("A", "B")
ACTION_TYPES = (
    "scale_workload",
    "place_replica",
    "cordon_node",
    "uncordon_node",
    "drain_node",
    "rotate_mode",
)


def metric(top: int) -> st.SearchStrategy[Metric]:
    """A fresh reading in [0, top], a stale one, or none."""
    values = st.integers(0, top).map(float)
    return st.one_of(
        values.map(lambda v: Metric.fresh(v, T0, "h")),
        st.just(Metric.missing()),
        values.map(lambda v: Metric(value=v, status="stale", observed_at=T0)),
    )


UTILIZATION = metric(100)
QUEUE_DEPTH = metric(20)
QUEUE_WAIT = metric(120)
SPEED = metric(200)
GID = st.sampled_from([Metric.fresh(3.0, T0), Metric.fresh(5.0, T0), Metric.missing()])
BOOL = st.booleans()
COUNT = [st.integers(0, n) for n in range(9)]
SPANS = {
    (k, span): st.lists(st.sampled_from(NODES[:k]), min_size=span, max_size=span, unique=True)
    for k in range(2, len(NODES) + 1)
    for span in (1, 2)
}
KINDS = st.sampled_from(["inference", "render", "tts", "batch"])
MODEL = st.sampled_from(MODELS)
POOL = st.sampled_from(POOLS)


@st.composite
def states(draw: st.DrawFn) -> ClusterState:
    nodes = []
    count = 2 + draw(COUNT[len(NODES) - 2])
    for i, name in enumerate(NODES[:count]):
        gpus = tuple(
            Gpu(uuid=f"{name}-g{g}", index=g, model=draw(MODEL), node=name,
                utilization=draw(UTILIZATION))
            for g in range(draw(COUNT[3]))
        )  # fmt: skip
        nodes.append(
            Node(name=name, labels={"zone": str(i % 2)}, cordoned=draw(BOOL),
                 ready=draw(BOOL), memory_total_bytes=1 << 30, gpus=gpus)
        )  # fmt: skip
    node_names = [n.name for n in nodes]
    workloads = []
    for name in WORKLOADS[: 1 + draw(COUNT[len(WORKLOADS) - 1])]:
        desired = draw(COUNT[5])
        span = 1 + draw(COUNT[1])
        placement = tuple(
            ReplicaPlacement(index=r, nodes=tuple(draw(SPANS[count, span])), ready=draw(BOOL))
            for r in range(draw(COUNT[desired]))
        )
        workloads.append(
            Workload(
                name=name, kind=draw(KINDS), pool=draw(POOL), desired_replicas=desired,
                ready_replicas=sum(p.ready for p in placement),
                cards_per_replica=draw(COUNT[3]), nodes_per_replica=span,
                queue_depth=draw(QUEUE_DEPTH), queue_wait_s=draw(QUEUE_WAIT),
                placement=placement,
            )
        )  # fmt: skip
    names = [w.name for w in workloads]
    modes: list[Mode] = []
    links: list[Link] = []
    active = None
    if draw(BOOL):
        group = tuple(node_names[:2])
        split = draw(COUNT[len(names)])
        for mode, members in zip(MODES, (names[:split], names[split:]), strict=True):
            modes.append(
                Mode(
                    name=mode,
                    nodes=group,
                    workloads=tuple(members),
                    aggregate_peak_tok_s=1,
                    single_stream_tok_s=1,
                    max_context=1,
                )
            )
        links.append(
            Link(name="l", nodes=(group[0], group[1]), configured_gid_index=3,
                 paths=tuple(LinkPath(name=f"r{i}", nominal_gbps=200,
                                      negotiated_gbps=draw(SPEED), gid_index=draw(GID))
                             for i in range(2)))
        )  # fmt: skip
        active = ActiveMode(name=draw(MODE), since=T0 - draw(AGO))
    return ClusterState(observed_at=T0, nodes=tuple(nodes), workloads=tuple(workloads),
                        modes=tuple(modes), active_mode=active, links=tuple(links))  # fmt: skip


minutes = st.integers(0, 30).map(lambda m: timedelta(minutes=m))
MODE = st.sampled_from(MODES)
AGO = st.integers(0, 120).map(lambda m: timedelta(minutes=m))
ACTION_TYPE_LISTS = st.lists(st.sampled_from(ACTION_TYPES), min_size=1, max_size=3, unique=True)
DIRECTION = st.sampled_from(["up", "down", "to_zero", "any"])
WINDOW = st.none() | st.builds(Window, start=st.times(), end=st.times())
ALLOW = st.sampled_from(["scale_up_only", "nothing"])
MAYBE_MINUTES = st.none() | minutes
ONE_MODEL = st.lists(MODEL, unique=True, max_size=1)
PROTECTED = st.lists(st.sampled_from([*WORKLOADS, "ghost"]), unique=True, max_size=2)
BY_ACTION = st.dictionaries(st.sampled_from(ACTION_TYPES), minutes, max_size=3)
BY_TARGET = st.dictionaries(st.sampled_from([*WORKLOADS, *NODES, *MODES]), minutes, max_size=2)
MAYBE_10 = st.none() | st.integers(0, 10)
MAYBE_8 = st.none() | st.integers(0, 8)
ZONE = st.sampled_from(["UTC", "Europe/Madrid", "Asia/Kolkata"])
POOL_SETS = st.lists(POOL, min_size=1, unique=True)
FRACTION = st.integers(0, 60).map(lambda p: p / 100)


GROUPS = {"ops": Group(members=("ana",)), "leads": Group(members=("ben",))}
GROUP = st.sampled_from(sorted(GROUPS))


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    pools: dict[str, PoolPolicy] = {}
    for name in draw(POOL_SETS):
        low = draw(COUNT[6])
        high = low + draw(COUNT[8])
        pools[name] = PoolPolicy(
            min_cards=low, max_cards=high, min_ready_replicas=draw(COUNT[2]) if high else 0,
            priority=draw(PRIORITY),
            idle_before_zero=draw(MAYBE_MINUTES), gpu_models=tuple(draw(ONE_MODEL)),
        )  # fmt: skip
    managed = st.sampled_from(sorted(pools))
    floor = sum(p.min_cards for p in pools.values())
    groups = GROUPS
    approvals = tuple(
        ApprovalRule(
            name=f"a{i}", actions=tuple(draw(ACTION_TYPE_LISTS)),
            pools=(draw(managed),) if draw(BOOL) else (), direction=draw(DIRECTION),
            window=draw(WINDOW), approvers=(draw(GROUP),),
        )
        for i in range(draw(COUNT[2]))
    )  # fmt: skip
    windows = tuple(
        QuietWindow(name=f"q{i}", start=draw(st.times()), end=draw(st.times()), allow=draw(ALLOW))
        for i in range(draw(COUNT[1]))
    )
    total = draw(MAYBE_10)
    return Policy(
        timezone=draw(ZONE),
        pools=pools,
        budget=Budget(total_cards=None if total is None else floor + total),
        protected=tuple(draw(PROTECTED)),
        cooldowns=Cooldowns(by_action=draw(BY_ACTION), by_target=draw(BY_TARGET)),
        change_budget=ChangeBudget(actions_per_hour=draw(MAYBE_10), cards_per_tick=draw(MAYBE_8)),
        approvals=approvals,
        windows=windows,
        slo={p: SloTarget(queue_wait_s=1.0 + draw(COUNT[8]) * 10) for p in pools if draw(BOOL)},
        approvers=Approvers(groups=groups),
        rotation=Rotation(min_link_fraction=draw(FRACTION),
                          expected_gid_index=3 if draw(BOOL) else None, min_dwell=draw(minutes)),
    )  # fmt: skip


REPLICAS = st.integers(0, 8) | st.sampled_from([10**6, 3 * 10**15])
WORKLOAD = st.sampled_from([*WORKLOADS, "ghost"])
NODE = st.sampled_from([*NODES, "nowhere"])
ACTIONS: st.SearchStrategy[Action] = st.one_of(
    st.builds(ScaleWorkload, workload=WORKLOAD, replicas=REPLICAS),
    st.builds(ScaleWorkload, workload=WORKLOAD, replicas=REPLICAS),
    st.builds(PlaceReplica, workload=WORKLOAD, node=NODE),
    st.builds(CordonNode, node=NODE),
    st.builds(UncordonNode, node=NODE),
    st.builds(DrainNode, node=NODE),
    st.builds(RotateMode, target_mode=st.sampled_from([*MODES, "turbo"])),
    st.just(NoOp(reason="hold")),
    # a hostile planner bypassing validation
    st.builds(
        lambda w, r: ScaleWorkload.model_construct(workload=w, replicas=r),
        WORKLOAD, st.sampled_from([-1, -(10**9), 2.5, True, None]),
    ),
)  # fmt: skip
PRIORITY = st.integers(0, 3).map(lambda p: p * 20)
SMALL = st.integers(0, 3)
PREEMPTION_PAIR = st.tuples(
    st.builds(ScaleWorkload, workload=WORKLOAD, replicas=SMALL),
    st.one_of(
        st.builds(ScaleWorkload, workload=WORKLOAD, replicas=st.integers(1, 5)),
        st.builds(PlaceReplica, workload=WORKLOAD, node=NODE),
    ),
)
"""A scale-down followed by a growth elsewhere: the shape of a preemption by priority."""


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    """Random actions; every other plan has a preemption-shaped pair somewhere in it."""
    actions = draw(st.lists(ACTIONS, max_size=8))
    if draw(BOOL):
        down, up = draw(PREEMPTION_PAIR)
        at = draw(st.integers(0, len(actions)))
        gap = draw(st.lists(ACTIONS, max_size=2))
        actions[at:at] = [down, *gap, up]
    return Plan(actions=tuple(actions))


PLANS = plans()
HISTORY_AGO = st.integers(-5, 120).map(lambda m: timedelta(minutes=m))
WATCHED_FOR = st.integers(0, 60).map(lambda m: timedelta(minutes=m))
NOW = st.integers(0, 24 * 60).map(lambda m: T0 + timedelta(minutes=m))
PLANS_PER_CASE = 10


@st.composite
def histories(draw: st.DrawFn, state: ClusterState, policy: Policy) -> History:
    history = History()
    if draw(BOOL):
        since = draw(WATCHED_FOR)
        start = ClusterState.model_validate(
            {**{f: getattr(state, f) for f in ClusterState.model_fields},
             "observed_at": state.observed_at - since}
        )  # fmt: skip
        history = history.observed(start, policy)
    history = history.observed(state, policy) if draw(BOOL) else history
    for action in draw(st.lists(ACTIONS, max_size=10)):
        history = history.record(action, T0 - draw(HISTORY_AGO))
    return history


def scenario() -> st.SearchStrategy[dict[str, Any]]:
    """A state, a policy, a history, a time and several plans to judge against them."""

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        state = draw(states())
        policy = draw(policies())
        return {
            "state": state,
            "policy": policy,
            "history": draw(histories(state, policy)),
            "now": draw(NOW),
            "plans": draw(st.lists(PLANS, min_size=PLANS_PER_CASE, max_size=PLANS_PER_CASE)),
        }

    return build()
