"""A node whose cards read alike comes as one series of the node, and every card still holds
exactly what its own series says: spread back per card before the join, the node's cards asked
one by one where the node's series cannot stand for them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from lab.bench.prometheus_server import RealPrometheus
from tests.metrics.cluster import GIB, Exporters, bare, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.alike import spread
from tools.metrics.prometheus.indexes import CardIndex
from tools.metrics.prometheus.queries import CARDS, RULES_FILE, STAMP
from tools.metrics.prometheus.vector import Vector
from tools.model import ClusterState, Metric

NOW = 1_796_000_000.0


def test_a_node_series_becomes_one_series_per_card_of_the_node() -> None:
    state = bare(truth())
    cards = CardIndex(state)
    node = {"Hostname": "gpu-a", CARDS: "2", STAMP: repr(NOW - 4)}
    short = {"Hostname": "gpu-b", CARDS: "1", STAMP: repr(NOW - 4)}  # gpu-b has two cards
    stranger = {"Hostname": "nowhere", CARDS: "8", STAMP: repr(NOW - 4)}
    own = {"UUID": "GPU-gx10-0", "gpu": "0", "Hostname": "gx10", STAMP: repr(NOW - 2)}
    answer = Vector(NOW, [(node, 50.0), (short, 88.0), (stranger, 1.0), (own, 12.0)])
    made, unplaced = spread(answer, cards)
    assert made.series == [
        ({"UUID": "GPU-gpu-a-0", STAMP: repr(NOW - 4)}, 50.0),
        ({"UUID": "GPU-gpu-a-1", STAMP: repr(NOW - 4)}, 50.0),
        (own, 12.0),
    ]
    assert unplaced == [short, stranger]
    plain = Vector(NOW, [(own, 12.0)])
    assert spread(plain, cards) == (plain, [])


def _alike() -> ClusterState:
    """The known cluster with gpu-a's two cards reading alike (utilization, memory)."""
    state = truth()
    a = state.nodes[0]
    same = {
        "utilization": Metric.fresh(50.0, state.observed_at, "truth"),
        "memory_used_bytes": Metric.fresh(20.0 * GIB, state.observed_at, "truth"),
    }
    gpus = tuple(g.model_copy(update=same) for g in a.gpus)
    nodes = (a.model_copy(update={"gpus": gpus}), *state.nodes[1:])
    return state.model_copy(update={"nodes": nodes})


@pytest.fixture(scope="module")
def ruled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealPrometheus]:
    workdir: Path = tmp_path_factory.mktemp("prometheus-alike")
    with (
        Exporters(_alike()) as exporters,
        RealPrometheus(workdir, exporters.targets, rules=(RULES_FILE,)) as server,
    ):
        server.wait_for_scrapes(7)
        server.wait_for_rules()
        yield server


def _read(prometheus: RealPrometheus, rules: Literal["recorded", "raw"]) -> ClusterState:
    source = PrometheusSource(PrometheusSettings(url=prometheus.url, window="5s", rules=rules))
    try:
        answers = source.ask()
        if rules == "recorded":
            util = answers["gpu_util"]
            assert isinstance(util, Vector)
            # gpu-a's cards alike, gpu-b's one exported card, gx10's one: a series a node.
            assert len(util) == 3 and util.column(CARDS).count(None) == 0
        state = source.read(bare(_alike()))
        if rules == "recorded":
            # Utilization: gpu-a, gpu-b (its one exported card: asked again), gx10; memory used
            # and free: gpu-a (gx10's are marked as host memory, gpu-b's differ).
            assert source.last_tick is not None and source.last_tick.node_series == 5
        return state
    finally:
        source.close()


def test_cards_read_through_their_nodes_series_hold_what_their_own_series_hold(
    ruled: RealPrometheus,
) -> None:
    """gpu-a's cards come as one series (utilization and memory used), gx10's single card too;
    gpu-b exports one card's utilization of its two, so its node series cannot say which card
    it is: that node's cards are asked one by one. Every card reads as over the raw series."""
    recorded, raw = _read(ruled, "recorded"), _read(ruled, "raw")
    for mine, theirs in zip(recorded.nodes, raw.nodes, strict=True):
        for card, other in zip(mine.gpus, theirs.gpus, strict=True):
            for field in ("utilization", "memory_used_bytes", "memory_total_bytes"):
                a, b = getattr(card, field), getattr(other, field)
                assert (a.value, a.status) == (b.value, b.status), (card.uuid, field)
    a0, a1 = recorded.nodes[0].gpus
    assert a0.utilization.value == a1.utilization.value == 50.0
    assert a0.memory_used_bytes.value == 20.0 * GIB
    b0, b1 = recorded.nodes[1].gpus
    assert b0.utilization.value == 88.0 and b1.utilization.status == "missing"
