"""The system test with real telemetry: the twin exports its cards and engines under DCGM's and
vLLM's names, a real Prometheus scrapes them, and the loop on the Kubernetes backend — its metric
source opened from steward.yaml by the composition root, as `steward run --backend kubernetes`
opens it — makes the built-in day's decisions as the loop on the embedded simulator does.

Time is the twin's: each tick advances it 15 s and waits until Prometheus has scraped the new
instant; the exporters stamp their samples with the simulated time; Prometheus keeps them
(`out_of_order_time_window` covers the simulated day, months before the wall clock) and the
source queries at the observation's time (`evaluate_at: observation`). Samples with their own
timestamps get no staleness markers, so a lookback below one tick makes a series that is gone
disappear at the next tick, as it would on a real cluster.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from agent.daemon.compose import metric_sources
from agent.daemon.config import load_config
from lab.bench.prometheus_server import RealPrometheus
from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.server import Twin
from policies.loader import DEFAULT_POLICY, load_policy
from tests.kubernetes.conftest import settings_for
from tests.kubernetes.day import TwinWorld, assert_same, decisions, embedded_decisions, loop_on_twin
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.metrics.prometheus import PrometheusSource

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
TICKS = 480  # the whole built-in day
SCRAPE = "250ms"


def twin_jobs(target: str, timeout: str = SCRAPE) -> list[dict[str, Any]]:
    """Prometheus's scrape configs for the twin's three exporters at `target` (host:port)."""
    return [
        {
            "job_name": f"twin-{name}",
            "metrics_path": f"/twin/exporters/{name}/metrics",
            "honor_labels": True,  # one endpoint writes every pod's own labels
            "scrape_timeout": timeout,
            "static_configs": [{"targets": [target]}],
        }
        for name in ("dcgm", "engines", "kueue")
    ]


class ScrapedTwin(TwinWorld):
    """The twin's time, and each new instant scraped by Prometheus before the loop reads it."""

    def __init__(self, twin: Twin, cluster: KubernetesCluster, prometheus: str) -> None:
        super().__init__(twin, cluster)
        self.prometheus = httpx.Client(base_url=prometheus, timeout=5)

    def advance(self, seconds: float) -> None:
        super().advance(seconds)
        self.wait_scraped()

    def wait_scraped(self, timeout_s: float = 30.0) -> None:
        """Until every exporter's samples of the twin's now are in (a card's, a pool's, a
        job queue's)."""
        at = self.now.timestamp()
        deadline = time.monotonic() + timeout_s
        for metric in (
            "DCGM_FI_DEV_GPU_UTIL",
            "inference_pool_average_queue_size",
            "kueue_local_queue_pending_workloads",
        ):
            query = f"max(timestamp({metric}))"
            while True:
                got = self.prometheus.get("/api/v1/query", params={"query": query, "time": at})
                result = got.json()["data"]["result"]
                if result and float(result[0]["value"][1]) >= at:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Prometheus did not scrape the twin at {self.now}")
                time.sleep(0.05)


def _config(tmp_path: Path, prometheus: RealPrometheus) -> Path:
    path = tmp_path / "steward.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "backend": "kubernetes",
                "metrics": {
                    "sources": ["prometheus"],
                    "prometheus": {
                        "url": prometheus.url,
                        "evaluate_at": "observation",
                        "window": "15s",  # one tick: the last tick's counts, as the simulator
                    },
                },
            }
        )
    )
    return path


def test_the_day_read_through_prometheus_is_decided_as_the_simulator_decides(
    tmp_path: Path,
) -> None:
    policy = load_policy(DEFAULT_POLICY)
    expected = embedded_decisions(tmp_path / "sim", TICKS)
    assert len(expected) >= 6  # burst-llm borrows render-1's cards and gives them back ...

    with Twin(SimCluster(default_day())) as twin:
        workdir = tmp_path / "prometheus"
        workdir.mkdir()
        with RealPrometheus(
            workdir,
            [],
            interval=SCRAPE,
            jobs=twin_jobs(f"{twin.host}:{twin.port}"),
            storage={"tsdb": {"out_of_order_time_window": "3650d"}},
            flags=("--query.lookback-delta=10s",),
        ) as prometheus:
            config = load_config(_config(tmp_path, prometheus), env={})
            sources = metric_sources(config)
            source = sources[0]
            assert len(sources) == 1 and isinstance(source, PrometheusSource)
            holder: dict[str, ScrapedTwin] = {}
            cluster = KubernetesCluster(settings_for(twin), now=lambda: holder["w"].now)
            world = holder["w"] = ScrapedTwin(twin, cluster, prometheus.url)
            try:
                cluster.start()
                world.wait_scraped()
                loop_on_twin(tmp_path / "k8s", cluster, world, policy, sources, TICKS)
                report = source.last_tick
                assert report is not None and not report.failed, report
                assert report.series > 0 and report.unmatched == 0, report
            finally:
                cluster.close()
                source.close()
    assert_same(decisions(tmp_path / "k8s"), expected)
