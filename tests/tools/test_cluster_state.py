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
