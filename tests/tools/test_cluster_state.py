"""ClusterState lookups stay true to the state they are asked of."""

from __future__ import annotations

from datetime import UTC, datetime

from tools.model import ClusterState, Node, Workload


def _state() -> ClusterState:
    return ClusterState(
        observed_at=datetime(2026, 3, 2, tzinfo=UTC),
        nodes=(Node(name="gx10-a", memory_total_bytes=128 * 2**30),),
        workloads=(
            Workload(
                name="beast",
                kind="inference",
                pool="gx10",
                desired_replicas=1,
                ready_replicas=1,
                cards_per_replica=2,
            ),
        ),
    )


def test_a_copy_does_not_keep_the_old_indexes() -> None:
    state = _state()
    assert state.workload("beast") is not None and state.node("gx10-a") is not None
    emptied = state.model_copy(update={"workloads": (), "nodes": ()})
    assert emptied.workload("beast") is None
    assert emptied.node("gx10-a") is None
    assert state.workload("beast") is not None


def test_pool_cards_and_digest() -> None:
    state = _state()
    assert state.pool_cards("gx10") == 2
    assert state.digest() == _state().digest()
    assert state.digest() != state.model_copy(update={"workloads": ()}).digest()


def test_pool_nodes_follow_the_selector_and_the_copy() -> None:
    from tools.model import Pool

    state = ClusterState(
        observed_at=datetime(2026, 3, 2, tzinfo=UTC),
        nodes=(
            Node(name="render-1", labels={"role": "render", "zone": "a"}, memory_total_bytes=1),
            Node(name="gx10-a", labels={"role": "gx10", "zone": "a"}, memory_total_bytes=1),
        ),
        pools=(
            Pool(name="render", node_selector={"role": "render"}),
            Pool(name="zone-a-gx10", node_selector={"role": "gx10", "zone": "a"}),
            Pool(name="anywhere"),
        ),
    )
    assert state.pool_nodes("render") == {"render-1"}
    assert state.pool_nodes("zone-a-gx10") == {"gx10-a"}
    assert state.pool_nodes("anywhere") == {"render-1", "gx10-a"}
    assert state.pool_nodes("unknown") == {"render-1", "gx10-a"}
    relabelled = state.model_copy(
        update={"nodes": (Node(name="gx10-a", labels={"role": "render"}, memory_total_bytes=1),)}
    )
    assert relabelled.pool_nodes("render") == {"gx10-a"}
