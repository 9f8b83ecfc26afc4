"""A series Prometheus still answers from an earlier scrape dates its own card, not its node's.

An exporter that stamps its samples with its own clock (or a pod gone while Prometheus was
down) leaves a series that gets no staleness marker: Prometheus answers its last sample for the
whole lookback. Here the card serving `chat` loses its client between two scrapes, so its DCGM
series changes labels (no more `pod`) and the old one lingers. Only that card's reading turns
stale; the other cards of the same exporter — the same scrape target — stay fresh.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lab.bench.prometheus_server import RealPrometheus
from tests.metrics.cluster import bare, truth
from tools.metrics.exposition import card_lines, render
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.serve import MetricsServer
from tools.model import ClusterState, Metric

pytestmark = pytest.mark.slow
STALE_AFTER_S = 3.0


def _without_clients(state: ClusterState, uuid: str) -> ClusterState:
    nodes = tuple(
        n.model_copy(
            update={
                "gpus": tuple(
                    g.model_copy(update={"clients": ()}) if g.uuid == uuid else g for g in n.gpus
                )
            }
        )
        for n in state.nodes
    )
    return state.model_copy(update={"nodes": nodes})


def test_a_lingering_series_makes_only_its_own_card_stale(tmp_path: Path) -> None:
    served = {"state": truth()}
    lock = threading.Lock()

    def body() -> bytes:  # every sample stamped now, as an exporter with a clock of its own
        with lock:
            return render(card_lines(served["state"]), datetime.now(UTC))

    read = {g.uuid for n in truth().nodes for g in n.gpus if g.utilization.usable}
    exporter = MetricsServer(body).start()
    try:
        with RealPrometheus(tmp_path, [f"127.0.0.1:{exporter.port}"], interval="1s") as prom:
            settings = PrometheusSettings(
                url=prom.url,
                staleness_s=STALE_AFTER_S,
                queries={"fb_free": "", "fb_used": "", "power": ""},
            )
            source = PrometheusSource(settings)
            try:
                prom.wait_for_scrapes(2)
                before = _utilization(source.read(bare(truth())))
                with lock:  # chat's replica on gpu-a's first card is gone: its series changes
                    served["state"] = _without_clients(truth(), "GPU-gpu-a-0")
                prom.wait_for_scrapes(2)
                time.sleep(STALE_AFTER_S + 1)  # the old series' last sample is past the bound
                after = _utilization(source.read(bare(truth())))
            finally:
                source.close()
    finally:
        exporter.stop()
    assert all(before[u].status == "fresh" for u in read)
    assert after["GPU-gpu-a-0"].status == "stale"
    assert "old (bound 3 s)" in after["GPU-gpu-a-0"].source
    neighbours = read - {"GPU-gpu-a-0"}
    assert "GPU-gpu-a-1" in neighbours  # the same node, the same exporter
    assert all(after[u].status == "fresh" for u in neighbours)


def _utilization(state: ClusterState) -> dict[str, Metric]:
    return {g.uuid: g.utilization for n in state.nodes for g in n.gpus}
