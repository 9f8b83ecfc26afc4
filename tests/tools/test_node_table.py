"""A `NodeTable` answers what deriving every node afresh would, deriving only what changed.

Observations are parsed afresh from JSON, as a backend hands them over, so nothing is found by
object identity. A property test plays random sequences of them — nodes rescraped (a new
readings version), rebuilt (a new version), added, dropped, reordered, and unversioned copies
observed in between, as a plan's projection is — and compares every table with one derived
from the nodes directly; the examples count what was derived.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.bases import new_version
from tools.model import ClusterState, Gpu, Metric, Node
from tools.node_table import NodeTable

AT = datetime(2026, 3, 2, tzinfo=UTC)


def _node(name: str, util: float, *, cordoned: bool = False) -> Node:
    return Node(
        name=name,
        cordoned=cordoned,
        memory_total_bytes=1,
        gpus=(_card(name, util),),
        version=new_version(),
    )


def _card(node: str, util: float) -> Gpu:
    reading = Metric.fresh(util, AT, "dcgm")
    return Gpu(uuid=f"GPU-{node}", index=0, model="H200", node=node, utilization=reading)


def _observe(nodes: list[Node]) -> ClusterState:
    state = ClusterState(observed_at=AT, nodes=tuple(nodes))
    return ClusterState.model_validate_json(state.model_dump_json())


def _rescraped(node: Node, util: float) -> Node:
    """New readings under the producer's version, as a metric source merges them."""
    gpu = node.gpus[0].model_copy(update={"utilization": Metric.fresh(util, AT, "prometheus")})
    return node.model_copy(
        update={"gpus": (gpu,), "version": node.version, "readings_version": new_version()}
    )


def _utilization(node: Node) -> float | None:
    return node.gpus[0].utilization.value


def _cordoned(node: Node) -> bool:
    return node.cordoned


class _Counting:
    def __init__(self, derive: object) -> None:
        self.derive = derive
        self.names: list[str] = []

    def __call__(self, node: Node) -> object:
        self.names.append(node.name)
        return self.derive(node)  # type: ignore[operator]


def test_only_the_nodes_at_a_new_version_are_derived_again() -> None:
    counted = _Counting(_cordoned)
    table = NodeTable(counted, readings=False)
    nodes = [_node(f"n{i}", 10.0) for i in range(5)]
    assert table(_observe(nodes)) == dict.fromkeys((n.name for n in nodes), False)
    assert len(counted.names) == 5
    counted.names.clear()
    nodes[2] = nodes[2].model_copy(update={"cordoned": True, "version": new_version()})
    nodes[4] = _rescraped(nodes[4], 99.0)  # readings only: this table does not read them
    state = _observe(nodes)
    assert table(state) == {"n0": False, "n1": False, "n2": True, "n3": False, "n4": False}
    assert counted.names == ["n2"]
    counted.names.clear()
    assert table(state) is table(state)  # once per observation
    assert counted.names == []


def test_a_table_of_readings_follows_the_readings_version() -> None:
    counted = _Counting(_utilization)
    table = NodeTable(counted, readings=True)
    nodes = [_node(f"n{i}", 10.0) for i in range(4)]
    table(_observe(nodes))
    counted.names.clear()
    nodes[1] = _rescraped(nodes[1], 55.0)
    assert table(_observe(nodes)) == {"n0": 10.0, "n1": 55.0, "n2": 10.0, "n3": 10.0}
    assert counted.names == ["n1"]


def test_unversioned_nodes_are_derived_every_time_and_never_become_the_base() -> None:
    counted = _Counting(_cordoned)
    table = NodeTable(counted, readings=False)
    nodes = [_node(f"n{i}", 10.0) for i in range(3)]
    table(_observe(nodes))
    projected = [nodes[0].model_copy(update={"cordoned": True}), *nodes[1:]]  # version ""
    counted.names.clear()
    assert table(_observe(projected))["n0"] is True
    assert sorted(counted.names) == ["n0", "n1", "n2"]
    counted.names.clear()
    assert table(_observe(nodes)) == dict.fromkeys(("n0", "n1", "n2"), False)
    assert counted.names == []  # stepped from the last settled observation, not the projection


_step = st.tuples(
    st.sampled_from(["rescrape", "rebuild", "add", "drop", "reverse", "project"]),
    st.integers(0, 7),
    st.floats(0, 100, allow_nan=False),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(_step, min_size=1, max_size=12))
def test_every_table_is_what_deriving_every_node_afresh_gives(
    steps: list[tuple[str, int, float]],
) -> None:
    readings = NodeTable(_utilization, readings=True)
    shape = NodeTable(_cordoned, readings=False)
    nodes = [_node(f"n{i}", float(i)) for i in range(4)]
    added = 4
    for kind, at, value in steps:
        observed = nodes
        if kind == "rescrape" and nodes:
            nodes[at % len(nodes)] = _rescraped(nodes[at % len(nodes)], value)
        elif kind == "rebuild" and nodes:
            old = nodes[at % len(nodes)]
            update = {"cordoned": not old.cordoned, "version": new_version()}
            nodes[at % len(nodes)] = old.model_copy(update=update)
        elif kind == "add":
            nodes.append(_node(f"n{added}", value))
            added += 1
        elif kind == "drop" and nodes:
            del nodes[at % len(nodes)]
        elif kind == "reverse":
            nodes.reverse()
        elif kind == "project" and nodes:
            observed = [nodes[0].model_copy(update={"cordoned": True}), *nodes[1:]]
        state = _observe(observed)
        assert readings(state) == {n.name: _utilization(n) for n in state.nodes}
        assert shape(state) == {n.name: _cordoned(n) for n in state.nodes}
        assert list(shape(state)) == [n.name for n in state.nodes]
