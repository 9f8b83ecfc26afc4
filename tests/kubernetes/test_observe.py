"""The backend's ClusterState, read through the official client from the twin, is the one the
simulator itself reports for the same world (names, placement, cards, scheduler counts)."""

from __future__ import annotations

import time

from lab.sim.faults import MpsDoubleCount
from lab.sim.scenario import FleetProfile, Scenario
from lab.twin.server import Twin
from tests.kubernetes.conftest import open_backend, twin_of
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.model import ClusterState


def structure(state: ClusterState) -> dict[str, object]:
    """What the API can say about a world (measured values come from metric sources)."""
    return {
        "nodes": [
            (
                n.name,
                n.cordoned,
                n.ready,
                n.memory_total_bytes,
                n.unified_memory,
                n.scheduler,
                tuple(
                    (g.uuid, g.index, g.model, g.sharing, g.clients, g.memory_total_bytes.value)
                    for g in n.gpus
                ),
            )
            for n in sorted(state.nodes, key=lambda n: n.name)
        ],
        "workloads": [
            (
                w.name,
                w.kind,
                w.pool,
                w.desired_replicas,
                w.ready_replicas,
                w.cards_per_replica,
                w.nodes_per_replica,
                w.model,
                w.context_length,
                w.placement,
                w.annotations,
            )
            for w in state.workloads
        ],
        "pools": state.pools,
        "modes": state.modes,
        "active_mode": state.active_mode.name if state.active_mode else None,
        "links": [
            (lk.name, lk.nodes, [p.name for p in lk.paths], lk.configured_gid_index)
            for lk in state.links
        ],
    }


def test_the_default_day_reads_as_the_simulator_reports_it(
    twin: Twin, backend: KubernetesCluster
) -> None:
    assert structure(backend.observe()) == structure(twin.call(twin.sim.observe))
    for node in backend.observe().nodes:
        sim_node = twin.call(twin.sim.observe).node(node.name)
        assert sim_node is not None
        assert sim_node.labels.items() <= node.labels.items()


def _settled(twin: Twin, backend: KubernetesCluster, timeout_s: float = 10.0) -> None:
    """The backend's observation once it equals the simulator's. Each kind has its own watch
    cache, which catches up in its own time: right after the twin moves, one may still lack its
    kind's last change (the pods' cache alone cannot be waited for: the twin's last write may be
    a StatefulSet's status, which it never sees)."""
    want = structure(twin.call(twin.sim.observe))
    deadline = time.monotonic() + timeout_s
    while (got := structure(backend.observe())) != want and time.monotonic() < deadline:
        time.sleep(0.02)
    assert got == want


def test_it_stays_equal_as_replicas_come_and_go(twin: Twin, backend: KubernetesCluster) -> None:
    assert backend.scale("render", 0).ok
    assert backend.scale("burst-llm", 1).ok
    for _ in range(6):
        twin.advance(30)
        _settled(twin, backend)
    burst = backend.observe().workload("burst-llm")
    assert burst is not None and burst.ready_replicas == 1


def test_a_card_counted_twice_shows_in_the_scheduler_view() -> None:
    with twin_of(
        Scenario(faults=(MpsDoubleCount(node="ws-1"),), replicas={"tts": 1, "worker": 1})
    ) as t:
        b = open_backend(t)
        try:
            node = b.observe().node("ws-1")
            assert node is not None and node.scheduler is not None
            assert (node.scheduler.gpu_allocated, node.scheduler.gpu_allocatable) == (2, 1)
            assert node.gpus[0].sharing.mode == "mps"
        finally:
            b.close()


def test_a_small_fleet_reads_as_the_simulator_reports_it() -> None:
    with twin_of(Scenario(name="fleet", profile=FleetProfile(nodes=24, gpus_per_node=8))) as t:
        b = open_backend(t)
        try:
            assert structure(b.observe()) == structure(t.call(t.sim.observe))
        finally:
            b.close()


def test_pending_replicas_that_cannot_be_placed_are_pending_pods_with_an_event(
    twin: Twin, backend: KubernetesCluster
) -> None:
    """Scaled past what fits (bypassing the backend's own check, as kubectl would), the extra
    replica is a Pending pod and the scheduler's FailedScheduling event says why."""
    from kubernetes import client

    apps = client.AppsV1Api(backend.api)
    apps.patch_namespaced_deployment_scale("burst-llm", "default", {"spec": {"replicas": 1}})
    core = client.CoreV1Api(backend.api)
    pods = core.list_namespaced_pod("default", label_selector="steward.dev/workload=burst-llm")
    assert [p.status.phase for p in pods.items if p.status] == ["Pending"]
    events = core.list_namespaced_event("default", field_selector="reason=FailedScheduling")
    assert any("Insufficient nvidia.com/gpu" in (e.message or "") for e in events.items)
    deadline = time.monotonic() + 10  # the watch caches catch up, each in its own time
    while not ((burst := backend.observe().workload("burst-llm")) and burst.placement):
        assert time.monotonic() < deadline, "the pending replica never showed"
        time.sleep(0.02)
    assert burst.placement[0].nodes == ()


def test_closing_the_backend_ends_every_watch_thread_promptly(twin: Twin) -> None:
    """Each cache's informer is stopped through its own `stop` (no private attribute of the
    client read or written): its thread, the one that listed and delivers the events, ends, and
    closing does not wait on a quiet watch stream for its next line."""
    b = open_backend(twin)
    threads = [cache.thread for cache in b.caches.values()]
    assert threads and all(t is not None and t.is_alive() for t in threads)
    start = time.monotonic()
    b.close()
    assert time.monotonic() - start < 1.5 * len(threads)
    deadline = time.monotonic() + 10
    while any(t is not None and t.is_alive() for t in threads) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(t is not None and t.is_alive() for t in threads)
