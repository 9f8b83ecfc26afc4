"""Injected faults show in observe() as the real ones did, and never as invented readings."""

from __future__ import annotations

import pytest

from lab.sim.backend import SimCluster
from lab.sim.faults import (
    ApiErrors,
    GidChanged,
    LinkDegraded,
    MpsDoubleCount,
    NodeLoss,
    ProbeFailing,
)
from tests.sim.conftest import steady
from tools.errors import BackendUnavailable, TemporaryError


def test_link_path_at_11_percent_of_nominal_shows_in_observe() -> None:
    sim = SimCluster.homelab()
    sim.inject(LinkDegraded(link="gx10-link", path="rail-1", fraction=0.11))
    sim.advance(10)
    link = sim.observe().links[0]
    rail0, rail1 = link.paths
    assert rail1.fraction_of_nominal() == pytest.approx(0.11)
    assert rail1.negotiated_gbps.value == pytest.approx(22.0)
    assert rail0.negotiated_gbps.value == pytest.approx(98.01)
    assert sim.link_status("gx10-link") == link


def test_degraded_link_slows_the_tensor_parallel_model() -> None:
    sim = SimCluster.homelab()
    healthy = sim.probe("beast").tokens_per_s
    sim.inject(LinkDegraded(link="gx10-link", path="rail-1", fraction=0.11))
    degraded = sim.probe("beast").tokens_per_s
    assert healthy == pytest.approx(40.9)
    assert degraded is not None and degraded < 0.6 * 40.9


def test_changed_gid_index_shows_against_the_configured_one() -> None:
    sim = SimCluster.homelab()
    sim.inject(GidChanged(link="gx10-link", gid_index=1))
    sim.advance(10)
    link = sim.observe().links[0]
    assert link.configured_gid_index == 3
    assert [p.gid_index.value for p in link.paths] == [1.0, 1.0]
    probe = sim.probe("beast")
    assert probe.tokens_per_s is not None and probe.tokens_per_s < 10  # sockets, not RDMA


def test_lost_node_readings_go_stale_then_missing_never_invented() -> None:
    sim = SimCluster.homelab()
    sim.advance(20)
    before = sim.observe().node("ws-1")
    assert before is not None and before.gpus[0].utilization.status == "fresh"
    sim.inject(NodeLoss(node="ws-1"))
    sim.advance(20)
    node = sim.observe().node("ws-1")
    assert node is not None and not node.ready
    util = node.gpus[0].utilization
    assert util.status == "stale"
    assert util.value == before.gpus[0].utilization.value
    assert util.observed_at == before.gpus[0].utilization.observed_at
    assert sim.observe().workload("tts").ready_replicas == 0  # type: ignore[union-attr]
    sim.advance(300)
    gone = sim.observe().node("ws-1")
    assert gone is not None
    assert gone.gpus[0].utilization.status == "missing"
    assert gone.gpus[0].utilization.value is None
    assert gone.memory_used_bytes.value is None


def test_lost_node_comes_back_and_its_replicas_restart() -> None:
    sim = SimCluster.homelab()
    sim.inject(NodeLoss(node="ws-1", duration_s=60))
    sim.advance(70)
    tts = sim.observe().workload("tts")
    assert tts is not None and tts.ready_replicas == 0  # reloading its model
    sim.advance(60)
    assert sim.observe().workload("tts").ready_replicas == 1  # type: ignore[union-attr]
    assert sim.observe().node("ws-1").gpus[0].utilization.status == "fresh"  # type: ignore[union-attr]


def test_failing_probe() -> None:
    sim = SimCluster.homelab()
    sim.inject(ProbeFailing(workload="beast", duration_s=30))
    assert not sim.probe("beast").ok
    sim.advance(31)
    assert sim.probe("beast").ok


def test_transient_api_errors_raise_temporary_errors_then_pass() -> None:
    sim = SimCluster.homelab()
    sim.inject(ApiErrors(count=2, operations=("scale",)))
    for _ in range(2):
        with pytest.raises(TemporaryError):
            sim.scale("tts", 2, dry_run=True)
    assert sim.scale("tts", 1).ok
    sim.inject(ApiErrors(count=1, operations=("observe",)))
    with pytest.raises(BackendUnavailable):
        sim.observe()
    sim.observe()
    sim.inject(ApiErrors(count=1, operations=("scale",)))  # a second fault, after a spent one
    with pytest.raises(BackendUnavailable, match="1 of 1"):
        sim.scale("tts", 1)


def test_mps_double_count_shows_and_blocks_the_node() -> None:
    sim = SimCluster.from_scenario(steady("tts", 5))
    card = sim.observe().node("ws-1").gpus[0]  # type: ignore[union-attr]
    assert (card.sharing.mode, card.sharing.replicas) == ("mps", 2)
    assert card.clients == ("tts/0", "worker/0")
    sim.inject(MpsDoubleCount(node="ws-1"))
    sim.advance(5)
    view = sim.observe().node("ws-1").scheduler  # type: ignore[union-attr]
    assert view is not None and (view.gpu_allocated, view.gpu_allocatable) == (2, 1)
    refused = sim.place("tts", "ws-1")
    assert not refused.ok
    assert "refuses every pod" in refused.message
