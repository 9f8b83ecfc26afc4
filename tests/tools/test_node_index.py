"""An observation's node facts and groupings answer as a fresh look at its nodes would.

A property test plays random sequences of observations, each parsed afresh from JSON, with
nodes relabelled, cordoned, tainted, added and dropped, and compares every answer (facts, nodes
by card model, by a pool's selector) with one worked out from the nodes directly.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.model import ClusterState, Gpu, Node, Pool, Taint

AT = datetime(2026, 3, 2, tzinfo=UTC)
NAMES = [f"node-{i}" for i in range(6)]
MODELS = ["H200", "GB10"]
SELECTORS: list[dict[str, str]] = [{}, {"role": "render"}, {"role": "serve", "zone": "a"}]


def _node(  # noqa: PLR0917 - one node per line of the tests
    name: str, role: str, zone: str, model: str, cordoned: bool, tainted: bool
) -> Node:
    return Node(
        name=name,
        labels={"role": role, "zone": zone},
        cordoned=cordoned,
        taints=(Taint(key="gpu", effect="NoSchedule"),) if tainted else (),
        memory_total_bytes=1,
        gpus=(Gpu(uuid=f"GPU-{name}", index=0, model=model, node=name),),
    )


_nodes = st.builds(
    _node,
    st.sampled_from(NAMES),
    st.sampled_from(["render", "serve"]),
    st.sampled_from(["a", "b"]),
    st.sampled_from(MODELS),
    st.booleans(),
    st.booleans(),
)


def _observe(nodes: dict[str, Node]) -> ClusterState:
    pools = tuple(Pool(name=f"p{i}", node_selector=s) for i, s in enumerate(SELECTORS))
    state = ClusterState(observed_at=AT, nodes=tuple(nodes.values()), pools=pools)
    return ClusterState.model_validate_json(state.model_dump_json())  # as a backend parses it


def _assert_true_to(state: ClusterState) -> None:
    for node in state.nodes:
        facts = state.node_facts(node.name)
        assert facts is not None and state.node(node.name) == node
        assert facts.schedulable == node.schedulable
        assert facts.serviceable == node.model_copy(update={"cordoned": False}).schedulable
        assert facts.ready == node.ready
        assert facts.models == {g.model for g in node.gpus}
        assert dict(facts.labels) == node.labels
    assert state.node_facts("nowhere") is None
    for model in MODELS:
        expected = {n.name for n in state.nodes if any(g.model == model for g in n.gpus)}
        assert set(state.nodes_with_model({model})) == expected
        for n in state.nodes:
            assert state.carries(n.name, {model}) == (n.name in expected)
    assert not state.carries("nowhere", MODELS)
    for i, selector in enumerate(SELECTORS):
        expected = {
            n.name for n in state.nodes if all(n.labels.get(k) == v for k, v in selector.items())
        }
        assert state.pool_nodes(f"p{i}") == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_nodes, max_size=4), min_size=1, max_size=6), st.data())
def test_every_answer_matches_the_nodes_themselves(
    changes: list[list[Node]], data: st.DataObject
) -> None:
    nodes: dict[str, Node] = {}
    for step in changes:
        for node in step:
            nodes[node.name] = node  # a node changed or came
        if nodes and data.draw(st.booleans(), label="drop one"):
            nodes.pop(data.draw(st.sampled_from(sorted(nodes)), label="dropped"))
        _assert_true_to(_observe(nodes))
        if nodes and data.draw(st.booleans(), label="project a copy"):
            name = data.draw(st.sampled_from(sorted(nodes)), label="relabelled")
            moved = nodes[name].model_copy(update={"labels": {"role": "serve", "zone": "a"}})
            _assert_true_to(_observe({**nodes, name: moved}))


def test_a_relabelled_node_moves_between_pools_when_nothing_else_changed() -> None:
    nodes = {n: _node(n, "render", "a", "H200", False, False) for n in NAMES[:3]}
    first = _observe(nodes)
    assert first.pool_nodes("p1") == set(NAMES[:3])
    nodes[NAMES[0]] = _node(NAMES[0], "serve", "a", "H200", False, False)
    second = _observe(nodes)
    assert second.pool_nodes("p1") == set(NAMES[1:3])
    assert second.pool_nodes("p2") == {NAMES[0]}


def test_two_clusters_observed_in_turn_never_borrow_from_each_other() -> None:
    a = {n: _node(n, "render", "a", "H200", False, False) for n in NAMES[:3]}
    b = {n: _node(n, "serve", "b", "GB10", True, False) for n in NAMES[:3]}  # the same names
    for _ in range(2):
        _assert_true_to(_observe(a))
        _assert_true_to(_observe(b))


def test_a_changed_copy_is_read_again() -> None:
    node = _node(NAMES[0], "render", "a", "H200", False, False)
    _observe({node.name: node})
    copy = node.model_copy(update={"cordoned": True})
    facts = _observe({node.name: copy}).node_facts(node.name)
    assert facts is not None and not facts.schedulable and facts.serviceable


_steps = st.lists(
    st.lists(
        st.sampled_from(["same", "rescraped", "relabelled", "remodelled", "readied"]),
        min_size=len(NAMES),
        max_size=len(NAMES),
    ),
    min_size=1,
    max_size=5,
)


def _changed(node: Node, how: str) -> Node:
    if how == "same":
        return node
    if how == "rescraped":  # nothing the groupings read changed
        return node.model_copy(update={"cordoned": not node.cordoned})
    if how == "relabelled":
        labels = {**node.labels, "role": "serve" if node.labels["role"] == "render" else "render"}
        return node.model_copy(update={"labels": labels})
    if how == "remodelled":
        gpus = tuple(g.model_copy(update={"model": "GB10"}) for g in node.gpus)
        return node.model_copy(update={"gpus": gpus})
    return node.model_copy(update={"ready": not node.ready})


@settings(max_examples=60, deadline=None)
@given(_steps, st.booleans())
def test_the_same_nodes_in_the_same_order_answer_as_read_afresh(
    steps: list[list[str]], repeat_one: bool
) -> None:
    """The usual tick: the same names in the same order, some changed: the answers are those of
    the nodes."""
    nodes = [_node(n, "render", "a", "H200", False, False) for n in NAMES]
    _assert_true_to(_observe({n.name: n for n in nodes}))
    for step in steps:
        nodes = [_changed(n, how) for n, how in zip(nodes, step, strict=True)]
        _assert_true_to(_observe({n.name: n for n in nodes}))
        if repeat_one:  # a name twice: the last one of it is the node, as a dict would keep
            pools = tuple(Pool(name=f"p{i}", node_selector=s) for i, s in enumerate(SELECTORS))
            twice = ClusterState(observed_at=AT, nodes=(*nodes, nodes[0]), pools=pools)
            parsed = ClusterState.model_validate_json(twice.model_dump_json())
            assert parsed.node(nodes[0].name) == nodes[0]
            _assert_true_to(parsed)
