"""A node's shape and its readings are versioned apart: a metric source that merges readings
keeps the producer's `version` and sets `readings_version`, so what is derived from the shape
outlives the readings and what is derived from the readings does not."""

from __future__ import annotations

from datetime import UTC, datetime

from tools.bases import new_version, versions_of
from tools.derived import Derived
from tools.model import ClusterState, Gpu, Metric, Node
from tools.parsing import StateParser

AT = datetime(2026, 3, 4, 17, 0, tzinfo=UTC)


def _node(util: float, **versions: str) -> Node:
    gpu = Gpu(uuid="GPU-1", index=0, model="H200", node="n1", utilization=Metric.fresh(util, AT))
    return Node(name="n1", memory_total_bytes=1, gpus=(gpu,), **versions)


def test_a_copy_with_changes_knows_neither_version_unless_given_them() -> None:
    node = _node(10.0, version="v-shape", readings_version="r-1")
    copied = node.model_copy(update={"cordoned": True})
    assert (copied.version, copied.readings_version) == ("", "")
    # A producer's new version covers the readings too: the source's token is dropped.
    rebuilt = node.model_copy(update={"cordoned": True, "version": "v-2"})
    assert (rebuilt.version, rebuilt.readings_version) == ("v-2", "")
    merged = node.model_copy(update={"gpus": (), "version": "v-shape", "readings_version": "r-2"})
    assert (merged.version, merged.readings_version) == ("v-shape", "r-2")


def test_versions_are_tokens_not_content() -> None:
    one = _node(10.0, version="v1", readings_version="r1")
    assert one == _node(10.0, version="v1", readings_version="r2")
    assert one == _node(10.0)
    assert one != _node(11.0, version="v1", readings_version="r1")
    state = ClusterState(observed_at=AT, nodes=(one,))
    other = ClusterState(observed_at=AT, nodes=(_node(10.0, version="v9"),))
    assert state.digest() == other.digest()


def test_the_whole_content_token_joins_both_versions() -> None:
    assert versions_of(_node(1.0, version="v1")) == "v1"
    assert versions_of(_node(1.0, version="v1", readings_version="r1")) == "v1+r1"
    assert versions_of(_node(1.0, readings_version="r1")) == ""  # unknown shape: unknown


def test_a_fact_of_the_shape_outlives_new_readings_and_a_fact_of_readings_does_not() -> None:
    shape_calls: list[float] = []
    reading_calls: list[float] = []

    def cards(node: Node) -> int:
        shape_calls.append(node.gpus[0].utilization.value or 0.0)
        return len(node.gpus)

    def busy(node: Node) -> bool:
        value = node.gpus[0].utilization.value or 0.0
        reading_calls.append(value)
        return value > 50

    of_shape = Derived(cards, readings=False)
    of_readings = Derived(busy, readings=True)
    shape = new_version()
    for util in (10.0, 90.0, 90.0):
        node = _node(util, version=shape, readings_version=f"r{util:g}")
        assert of_shape(node) == 1
        assert of_readings(node) is (util > 50)
    assert shape_calls == [10.0]
    assert reading_calls == [10.0, 90.0]  # the third read was of a version seen before


def test_the_parser_takes_a_known_node_again_only_with_the_same_readings() -> None:
    parser = StateParser()
    shape = new_version()
    first = ClusterState(observed_at=AT, nodes=(_node(10.0, version=shape, readings_version="a"),))
    parsed = parser.parse(first.model_dump_json())
    again = parser.parse(first.model_dump_json())
    assert again.nodes[0] is parsed.nodes[0]
    later = ClusterState(observed_at=AT, nodes=(_node(90.0, version=shape, readings_version="b"),))
    fresh = parser.parse(later.model_dump_json())
    assert parser.validated == 1
    assert fresh.nodes[0].gpus[0].utilization.value == 90.0
