"""The loop on Prometheus's readings, and Prometheus killed mid-run.

The simulated cluster is exported under DCGM's and vLLM's names (tools.metrics.exposition), a
real Prometheus scrapes it, and the loop observes through `PrometheusSource`. The burst pool's
demand ends at 330 s and it would go to zero five minutes later; Prometheus is killed (SIGKILL)
before that. Within one tick the readings are stale, every running pool is held with a finding,
nothing is scaled down however long the outage lasts; once Prometheus is back the readings are
fresh again, the hold lifts and the pool goes to zero after idling its five minutes anew.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from agent.daemon.runtime import Runtime
from lab.bench.prometheus_server import RealPrometheus
from lab.sim.backend import SimCluster
from lab.sim.demand import BurstDemand
from lab.sim.scenario import Scenario
from lab.twin.engines import EngineExporter
from policies.loader import DEFAULT_POLICY, load_policy
from tools.backends.parts import Parts
from tools.metrics.exposition import card_lines, render
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.serve import MetricsServer
from tools.model import ClusterState

BURST = Scenario(
    name="one-burst",
    replicas={"render": 0, "burst-llm": 0},
    demand=(BurstDemand(target="burst-llm", rate_per_min=30, at_s=30, duration_s=300),),
)
TICK_S = 15.0
DOWN_AT, UP_AT, END = 28, 60, 100
"""Ticks: Prometheus is killed before tick 28 (~420 s, before the pool's five idle minutes are
up) and started again before tick 60 (~900 s)."""


class Publish:
    """A metric source that exports the observation it is given and waits for Prometheus to
    scrape it, so that the next source reads this very tick's values back."""

    name = "publish"

    def __init__(self) -> None:
        self.engines = EngineExporter(epp=True)
        self.body = b""
        self.lock = threading.Lock()
        self.server = MetricsServer(self._body)
        self.scraping = True

    def _body(self) -> bytes:
        with self.lock:
            return self.body

    def read(self, state: ClusterState) -> ClusterState:
        with self.lock:
            self.engines.update(state)
            self.body = render([*card_lines(state), *self.engines.lines()])
        if self.scraping:
            seen = self.server.scrapes
            deadline = time.monotonic() + 10
            while self.server.scrapes < seen + 2 and time.monotonic() < deadline:
                time.sleep(0.02)
        return state


class Keep:
    """The last observation as the loop saw it, after every source."""

    name = "keep"

    def __init__(self) -> None:
        self.state: ClusterState | None = None

    def read(self, state: ClusterState) -> ClusterState:
        self.state = state
        return state


def _prometheus_readings(state: ClusterState) -> list[tuple[str, str]]:
    cards: list[tuple[str, str]] = [
        (g.utilization.status, g.utilization.source) for n in state.nodes for g in n.gpus
    ]
    queues: list[tuple[str, str]] = [
        (w.queue_depth.status, w.queue_depth.source)
        for w in state.workloads
        if w.kind not in ("render", "batch") and w.desired_replicas > 0
    ]
    return cards + queues


def _scaled(actions: tuple[str, ...]) -> list[str]:
    """Scalings (down, to zero, or up: readings nobody trusts justify none)."""
    return [a for a in actions if a.startswith("scale ")]


@pytest.mark.slow
def test_killed_prometheus_holds_every_pool_and_the_loop_resumes_when_back(
    tmp_path: Path,
) -> None:
    publish, keep = Publish(), Keep()
    publish.server.start()
    (tmp_path / "prom").mkdir()
    prometheus = RealPrometheus(tmp_path / "prom", [f"127.0.0.1:{publish.server.port}"], "250ms")
    settings = PrometheusSettings(
        url=f"http://127.0.0.1:{prometheus.port}",
        window="2s",
        staleness_s=30,
        timeout_s=2,
        queries={"generation_tokens": ""},  # its rate is per wall second, the sim's per sim second
    )
    source = PrometheusSource(settings)
    data_dir = tmp_path / "steward"
    data_dir.mkdir()
    sim = SimCluster.open(data_dir, BURST)
    parts = Parts.of(sim, sources=(publish, source, keep))
    prometheus.start()
    reports = []
    try:
        with Runtime.open(data_dir, parts, load_policy(DEFAULT_POLICY)) as runtime:
            runtime.start()
            for tick in range(END):
                if tick == DOWN_AT:
                    prometheus.kill()
                    publish.scraping = False
                if tick == UP_AT:
                    prometheus.start()
                    publish.scraping = True
                report = runtime.tick(TICK_S)
                assert keep.state is not None
                reports.append((tick, report, _prometheus_readings(keep.state)))
    finally:
        prometheus.kill()
        source.close()
        publish.server.stop()

    before = [r for r in reports if 3 <= r[0] < DOWN_AT]
    assert all(status == "fresh" for r in before for status, _ in r[2]), before[-1][2]
    assert all(src.startswith("prometheus:") for r in before for _, src in r[2])
    assert not any("held" in f for r in before for f in r[1].findings)

    down = [r for r in reports if DOWN_AT <= r[0] < UP_AT]
    first = down[0]  # the very first tick after the kill
    assert first[2] and all(status != "fresh" for status, _ in first[2])
    assert all("unreachable" in src for _, src in first[2])
    for tick, report, _ in down:
        assert any("held" in f and "stale or missing" in f for f in report.findings), tick
        assert not _scaled(report.actions), (tick, report.actions)

    after = [r for r in reports if r[0] >= UP_AT + 2]
    assert all(status == "fresh" for status, _ in after[0][2])
    assert not any("held" in f for f in after[0][1].findings)
    zero = [r for r in after if any("burst-llm to 0" in a for a in r[1].actions)]
    assert zero, "the loop did not resume: the idle pool never went to zero after the outage"
    # The idle time starts again when the readings are back: five minutes of fresh idleness
    # after the last observation that could not tell.
    last_held = datetime.fromisoformat(down[-1][1].at)
    assert datetime.fromisoformat(zero[0][1].at) - last_held >= timedelta(minutes=5)
