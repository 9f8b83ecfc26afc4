"""`trusted` builds what validation would build; `Derived` works a fact out once per version."""

from __future__ import annotations

from datetime import UTC, datetime

from tools.derived import Derived
from tools.metric import made
from tools.model import Gpu, Metric, Node, Sharing

AT = datetime(2026, 3, 4, 17, 0, tzinfo=UTC)


def _reading(value: float) -> Metric:
    return made(value, "fresh", AT, "dcgm")


def _gpu_fields(util: Metric) -> dict[str, object]:
    return {
        "uuid": "GPU-1",
        "index": 0,
        "model": "H100",
        "node": "n1",
        "memory_total_bytes": Metric.fresh(80e9, AT, "dcgm"),
        "memory_used_bytes": Metric.fresh(1e9, AT, "dcgm"),
        "utilization": util,
        "power_w": Metric.fresh(90.0, AT, "dcgm"),
        "sharing": Sharing(),
        "clients": ("llm/0",),
    }


def test_a_trusted_model_equals_and_serializes_as_the_validated_one() -> None:
    gpu = Gpu.model_construct(**_gpu_fields(_reading(42.0)))
    validated = Gpu(
        **_gpu_fields(Metric(value=42.0, status="fresh", observed_at=AT, source="dcgm"))
    )
    assert gpu == validated
    assert gpu.model_dump_json() == validated.model_dump_json()
    assert gpu.model_fields_set == validated.model_fields_set


def test_copying_a_trusted_model_leaves_the_others_alone() -> None:
    first, second = (
        Gpu.model_construct(**_gpu_fields(_reading(1.0))),
        Gpu.model_construct(**_gpu_fields(_reading(2.0))),
    )
    copied = first.model_copy(update={"utilization": _reading(3.0)})
    assert copied.utilization.value == 3.0 and first.utilization.value == 1.0
    assert first.model_fields_set == second.model_fields_set == set(Gpu.model_fields)


def test_a_derived_fact_is_worked_out_once_per_version_of_the_object() -> None:
    calls: list[str] = []

    def cards(node: Node) -> int:
        calls.append(node.version)
        return len(node.gpus)

    derived = Derived(cards, readings=False)
    node = Node(name="n1", memory_total_bytes=1, gpus=(Gpu(**_gpu_fields(Metric())),), version="7")
    assert derived(node) == 1 and derived(node) == 1
    parsed_again = Node.model_validate_json(node.model_dump_json())
    assert parsed_again is not node and derived(parsed_again) == 1  # same version: reused
    assert calls == ["7"]
    replaced = node.model_copy(update={"gpus": ()})
    assert replaced.version == ""  # a changed copy does not keep its producer's version
    assert derived(replaced) == 0 and derived(replaced) == 0  # unknown: worked out each time
    newer = node.model_copy(update={"gpus": (), "version": "8"})
    assert derived(newer) == 0 and derived(newer) == 0
    assert calls == ["7", "", "", "8"]


def test_the_version_is_no_part_of_a_nodes_content() -> None:
    gpus = (Gpu(**_gpu_fields(Metric())),)
    first = Node(name="n1", memory_total_bytes=1, gpus=gpus, version="1")
    again = Node(name="n1", memory_total_bytes=1, gpus=gpus, version="2")
    other = Node(name="n1", memory_total_bytes=2, gpus=gpus, version="1")
    assert first == again and first != other
