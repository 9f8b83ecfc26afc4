"""The engine's verdicts on a fresh observation are those it gives with every cache out of play.

What the guard derives per node (policies.activity: the cards' fresh utilization, which decides
whether a pool is idle) is reused by version. Over random successive observations — parsed
afresh from JSON, with random cards re-read (and their node given a new version) in between —
every judgement and every pool's idleness equal those on the same states with every version
unknown, where nothing is reused.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.activity import pool_busy
from policies.engine import judge
from tests.policies.strategies import MODELS, POOLS, T0, scenario
from tools.bases import new_version
from tools.model import ClusterState, Metric, Node

READINGS = st.sampled_from(
    [Metric.fresh(0.0, T0, "h"), Metric.fresh(95.0, T0, "h"), Metric.missing("h")]
)
rereads = st.lists(
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3), READINGS), max_size=4),
    min_size=1,
    max_size=3,
)


def _with_nodes(state: ClusterState, nodes: tuple[Node, ...]) -> ClusterState:
    fields = {name: getattr(state, name) for name in ClusterState.model_fields}
    return ClusterState.model_validate({**fields, "nodes": nodes})


def _on_cards(state: ClusterState) -> ClusterState:
    """`state` with each replica on the first card of each of its nodes (the generated states
    place replicas on nodes only), so that the cards' utilization decides idleness."""
    workloads = []
    for w in state.workloads:
        placement = tuple(
            r.model_copy(update={"gpus": tuple(_first_card(state, n) for n in r.nodes)})
            for r in w.placement
        )
        workloads.append(w.model_copy(update={"placement": placement}))
    fields = {name: getattr(state, name) for name in ClusterState.model_fields}
    return ClusterState.model_validate({**fields, "workloads": tuple(workloads)})


def _first_card(state: ClusterState, name: str) -> str:
    node = state.node(name)
    return node.gpus[0].uuid if node is not None and node.gpus else f"{name}-none"


def _parsed(state: ClusterState) -> ClusterState:
    return ClusterState.model_validate_json(state.model_dump_json())


def _unversioned(state: ClusterState) -> ClusterState:
    return _with_nodes(state, tuple(n.model_copy(update={"version": ""}) for n in state.nodes))


def _reread(node: Node, card: int, reading: Metric) -> Node:
    if not node.gpus:
        return node
    i = card % len(node.gpus)
    gpus = list(node.gpus)
    gpus[i] = gpus[i].model_copy(update={"utilization": reading})
    return node.model_copy(update={"gpus": tuple(gpus), "version": new_version()})


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario(), rereads)
def test_fresh_observations_are_judged_as_with_no_cache(
    case: dict[str, Any], steps: list[list[tuple[int, int, Metric]]]
) -> None:
    policy, history, now = case["policy"], case["history"], case["now"]
    start = _on_cards(case["state"])
    state = _parsed(
        _with_nodes(
            start, tuple(n.model_copy(update={"version": new_version()}) for n in start.nodes)
        )
    )
    for step in steps:
        nodes = list(state.nodes)
        for at, card, reading in step:
            i = at % len(nodes)
            nodes[i] = _reread(nodes[i], card, reading)
        state = _parsed(_with_nodes(state, tuple(nodes)))
        reference = _unversioned(state)
        for pool in POOLS:
            assert pool_busy(state, pool, policy) == pool_busy(reference, pool, policy)
        for plan in case["plans"][:3]:
            assert judge(plan, state, policy, history, now) == judge(
                plan, reference, policy, history, now
            )


CHANGES = st.sampled_from(["cordon", "ready", "remodel", "zone"])
node_steps = st.lists(
    st.lists(st.tuples(st.integers(0, 8), CHANGES), max_size=4), min_size=1, max_size=3
)


def _changed(node: Node, change: str) -> Node:
    """`node` rebuilt by its producer at a new version, one thing the rules read changed."""
    assert set(MODELS) == {"A", "B"}  # what "remodel" swaps
    if change == "cordon":
        update: dict[str, Any] = {"cordoned": not node.cordoned}
    elif change == "ready":
        update = {"ready": not node.ready}
    elif change == "remodel":  # what a pool's gpu_models selects: the by-model grouping changes
        swapped = {"A": "B", "B": "A"}
        gpus = tuple(g.model_copy(update={"model": swapped[g.model]}) for g in node.gpus)
        update = {"gpus": gpus}
    else:
        update = {"labels": {**node.labels, "zone": "moved"}}
    return node.model_copy(update={**update, "version": new_version()})


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario(), node_steps)
def test_nodes_rebuilt_in_place_are_judged_as_with_no_cache(
    case: dict[str, Any], steps: list[list[tuple[int, str]]]
) -> None:
    """The usual tick: the same nodes in the same order, some at a new version (what the node
    index reads of only those, tools.derived.NodeIndex). Each judgement equals the one on the
    same state with every version unknown."""
    policy, history, now = case["policy"], case["history"], case["now"]
    start = case["state"]
    state = _parsed(
        _with_nodes(
            start, tuple(n.model_copy(update={"version": new_version()}) for n in start.nodes)
        )
    )
    for step in steps:
        nodes = list(state.nodes)
        for at, change in step:
            i = at % len(nodes)
            nodes[i] = _changed(nodes[i], change)
        state = _parsed(_with_nodes(state, tuple(nodes)))
        reference = _unversioned(state)
        for plan in case["plans"][:3]:
            assert judge(plan, state, policy, history, now) == judge(
                plan, reference, policy, history, now
            )
