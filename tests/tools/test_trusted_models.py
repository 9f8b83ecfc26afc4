"""`trusted` builds what validation would build; `Derived` works a fact out once per object."""

from __future__ import annotations

from datetime import UTC, datetime

from tools.model import Derived, Gpu, Metric, Node, Sharing, trusted

AT = datetime(2026, 3, 4, 17, 0, tzinfo=UTC)


def _metric_fields(value: float) -> dict[str, object]:
    return {"value": value, "status": "fresh", "observed_at": AT, "source": "dcgm"}


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
    util = trusted(Metric, _metric_fields(42.0))
    gpu = trusted(Gpu, _gpu_fields(util))
    validated = Gpu(**_gpu_fields(Metric(**_metric_fields(42.0))))
    assert gpu == validated
    assert gpu.model_dump_json() == validated.model_dump_json()
    assert gpu.model_fields_set == validated.model_fields_set
    assert hash(util) == hash(Metric(**_metric_fields(42.0)))


def test_copying_a_trusted_model_leaves_the_others_alone() -> None:
    first = trusted(Metric, _metric_fields(1.0))
    second = trusted(Metric, _metric_fields(2.0))
    stale = first.aged(datetime(2026, 3, 4, 18, 0, tzinfo=UTC), 90.0)
    assert stale.status == "stale" and first.status == "fresh"
    assert first.model_fields_set == second.model_fields_set == set(Metric.model_fields)


def test_a_derived_fact_is_worked_out_once_per_version_of_the_object() -> None:
    calls: list[str] = []

    def cards(node: Node) -> int:
        calls.append(node.name)
        return len(node.gpus)

    derived = Derived(cards)
    node = Node(name="n1", memory_total_bytes=1, gpus=(Gpu(**_gpu_fields(Metric())),))
    assert derived(node) == 1 and derived(node) == 1
    assert calls == ["n1"]
    replaced = node.model_copy(update={"gpus": ()})
    assert derived(replaced) == 0  # a new object under the same name: worked out again
    equal_but_new = Node(name="n1", memory_total_bytes=1, gpus=node.gpus)
    assert derived(equal_but_new) == 1
    assert calls == ["n1", "n1", "n1"]
