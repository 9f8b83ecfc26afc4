"""Capacity, anomalies and rankings are reused by version, never by object identity.

Over random successive observations — each parsed afresh from JSON, as a real backend builds
it, with random nodes changed (and given a new version) in between — placement answers exactly
what it answers with every cache out of play (every version unknown), and reuses the capacity
of exactly the nodes that did not change.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.placement.test_placement_properties import SETTINGS, clusters, workloads
from tests.placement.world import AT, GIB
from tools.bases import new_version
from tools.model import ClusterState, Metric, Node, Sharing, Taint, Workload
from tools.placement import load_catalog, node_capacity, pick_node, sharing_anomalies

CATALOG = load_catalog()

CHANGES = (
    "cordon",
    "uncordon",
    "taint",
    "not ready",
    "host memory",
    "card memory",
    "card client",
    "card shared",
    "card removed",
)


def _versioned(state: ClusterState) -> ClusterState:
    nodes = tuple(n.model_copy(update={"version": new_version()}) for n in state.nodes)
    return _with_nodes(state, nodes)


def _with_nodes(state: ClusterState, nodes: tuple[Node, ...]) -> ClusterState:
    fields = {name: getattr(state, name) for name in ClusterState.model_fields}
    return ClusterState.model_validate({**fields, "nodes": nodes})


def _parsed(state: ClusterState) -> ClusterState:
    return ClusterState.model_validate_json(state.model_dump_json())


def _unversioned(state: ClusterState) -> ClusterState:
    """The same content with every version unknown: every cache misses, all is worked out."""
    return _with_nodes(state, tuple(n.model_copy(update={"version": ""}) for n in state.nodes))


def _changed(node: Node, change: str, amount: int) -> Node:
    """`node` after one change its producer noticed, at a new version."""
    gpus = node.gpus
    update: dict[str, object] = {}
    if change == "cordon":
        update["cordoned"] = True
    elif change == "uncordon":
        update["cordoned"] = False
    elif change == "taint":
        update["taints"] = (*node.taints, Taint(key=f"t{amount}"))
    elif change == "not ready":
        update["ready"] = not node.ready
    elif change == "host memory":
        update["memory_used_bytes"] = Metric.fresh(float(amount * GIB), AT)
    elif gpus and change == "card memory":
        used = Metric.fresh(float(amount * GIB), AT)
        update["gpus"] = (gpus[0].model_copy(update={"memory_used_bytes": used}), *gpus[1:])
    elif gpus and change == "card client":
        clients = (*gpus[0].clients, f"other/{amount}")
        update["gpus"] = (gpus[0].model_copy(update={"clients": clients}), *gpus[1:])
    elif gpus and change == "card shared":
        sharing = Sharing(mode="time-slicing", replicas=1 + amount % 4)
        update["gpus"] = (gpus[0].model_copy(update={"sharing": sharing}), *gpus[1:])
    elif gpus and change == "card removed":
        update["gpus"] = gpus[1:]
    return node.model_copy(update={**update, "version": new_version()})


steps = st.lists(
    st.lists(
        st.tuples(st.integers(0, 6), st.sampled_from(CHANGES), st.integers(0, 60)), max_size=3
    ),
    min_size=1,
    max_size=4,
)


@SETTINGS
@given(clusters(), workloads(spans=(1,)), steps)
def test_successive_fresh_observations_answer_as_with_no_cache(
    base: ClusterState, workload: Workload, changes: list[list[tuple[int, str, int]]]
) -> None:
    state = _parsed(_versioned(base))
    before = node_capacity(state, CATALOG)
    for step in changes:
        nodes = list(state.nodes)
        touched = set()
        for at, change, amount in step:
            i = at % len(nodes)
            nodes[i] = _changed(nodes[i], change, amount)
            touched.add(nodes[i].name)
        state = _parsed(_with_nodes(state, tuple(nodes)))
        after = node_capacity(state, CATALOG)
        reference = _unversioned(state)
        assert after == node_capacity(reference, CATALOG)
        for name, capacity in after.items():
            if name not in touched:
                assert capacity is before[name]  # a fresh object of the same version: reused
        assert sharing_anomalies(state, CATALOG) == sharing_anomalies(reference, CATALOG)
        assert pick_node(workload, state, catalog=CATALOG) == pick_node(
            workload, reference, catalog=CATALOG
        )
        before = after


@SETTINGS
@given(clusters())
def test_an_equal_observation_parsed_again_hits_every_node(base: ClusterState) -> None:
    state = _versioned(base)
    first = node_capacity(state, CATALOG)
    again = node_capacity(_parsed(state), CATALOG)
    assert all(again[name] is first[name] for name in first)
    read_again = load_catalog()  # another catalogue object of the same content: the same key
    assert all(node_capacity(_parsed(state), read_again)[n] is first[n] for n in first)
