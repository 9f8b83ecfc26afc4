"""Capacity follows each observation: a changed node, a new replica, a new context, a fixed card."""

from __future__ import annotations

from tests.placement.world import homelab, idle_gx10_pair, rebuild, with_node
from tools.model import ClusterState, ReplicaPlacement
from tools.placement import load_catalog, node_capacity, sharing_anomalies

CATALOG = load_catalog()


def _parsed(state: ClusterState) -> ClusterState:
    """The same observation as a real backend builds it: every object new, parsed from JSON."""
    return ClusterState.model_validate_json(state.model_dump_json())


def test_an_unchanged_node_keeps_its_capacity_and_a_changed_one_is_recounted() -> None:
    first = homelab()
    before = node_capacity(first, CATALOG)
    second = _parsed(with_node(first, "render-1", cordoned=True))
    after = node_capacity(second, CATALOG)
    assert after["ws-1"] == before["ws-1"]
    assert after["render-1"].unschedulable == ("cordoned",)
    assert before["render-1"].schedulable


def test_a_replica_placed_on_an_unchanged_node_is_counted() -> None:
    first = idle_gx10_pair()
    assert node_capacity(first, CATALOG)["gx10-a"].free_slots == 1
    workloads = tuple(
        w.model_copy(
            update={
                "placement": (
                    ReplicaPlacement(index=0, nodes=("gx10-a",), gpus=("GPU-gx10-a",), ready=True),
                )
            }
        )
        if w.name == "resident-a"
        else w
        for w in first.workloads
    )
    second = rebuild(first, workloads=workloads)
    cap = node_capacity(second, CATALOG)["gx10-a"]
    assert cap.free_slots == 0
    assert cap.cards[0].clients == ("resident-a/0",)
    assert cap.replicas == {"resident-a": 1}


def test_a_changed_context_changes_the_estimated_memory_of_unmeasured_nodes() -> None:
    first = homelab(mode="cluster")  # GX10 host memory not measured: estimated
    used = node_capacity(first, CATALOG)["gx10-a"].memory_used_bytes
    workloads = tuple(
        w.model_copy(update={"context_length": 65_536}) if w.name == "beast" else w
        for w in first.workloads
    )
    second = rebuild(first, workloads=workloads)
    assert node_capacity(second, CATALOG)["gx10-a"].memory_used_bytes < used


def test_anomalies_follow_the_node_they_belong_to() -> None:
    clean = homelab()
    assert sharing_anomalies(clean, CATALOG) == []
    counted_twice = homelab(double_count=True)
    assert [a.kind for a in sharing_anomalies(counted_twice, CATALOG)] == ["mps_double_count"]
    ws1 = counted_twice.node("ws-1")
    assert ws1 is not None
    fixed = with_node(counted_twice, "ws-1", scheduler=ws1.scheduler
                      and ws1.scheduler.model_copy(update={"gpu_allocatable": 2}))  # fmt: skip
    assert sharing_anomalies(fixed, CATALOG) == []
