"""`steward bench loop --backend kubernetes`: one tick of the loop against the twin.

The fleet of `steward bench loop` (N nodes x 8 cards, steady demand) is served by the twin
(lab/twin) on loopback, in a process of its own as a cluster's API server is
(lab/bench/twin_process.py), and the loop runs on the Kubernetes backend through the official
client, as it would against a real cluster. Between two timed ticks (untimed, as on a cluster
where time passes by itself) the loop does what `Runtime.tick` does after a decision
(`housekeep`), the twin's world moves 15 s, and `churn` of the nodes post their status, as
kubelets do; the tick starts once every watch cache has seen the resourceVersion the twin
reached (an event or a bookmark), so it costs what changed, taken in, not a relist nor events
still streaming in. Reported besides the tick figures: the full lists the caches made
(`lists_at_start`, and `relists` after the first tick: the target is 0) and the watch events
taken in.

`metrics="prometheus"`: the twin's exporters (DCGM for every card, the serving engines, Kueue)
are scraped by a real Prometheus (the `prometheus` binary) that loads Steward's recording rules
(tools/metrics/prometheus/rules.yaml), and the loop reads its readings through the Prometheus
metric source: a timed tick is then the whole of it — the queries, the join, assess, plan,
guard, record (targets at 1,000 nodes: p99_ms <= 1,000, peak_rss_mb <= 400); `tick_cpu` is each
timed tick's CPU time in this process and `load_average` the machine's (1 minute) before and
after the timed ticks, for a machine shared with others. The exporters
write no sample times, as real ones: Prometheus dates each scrape on the wall clock, which is
the loop's too. `prometheus` reports the source's own part of the timed ticks (queries and
join), the series a tick read (`node_series_per_tick` of them each the one series of a node
whose cards read alike: docs/metrics.md, "Recording rules"), and which families the rules
answered."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from agent.daemon.runtime import Runtime
from lab.bench.fresh import INTERVAL_S, scrape_interval_s
from lab.bench.loop import DEFAULT_CHURN, _fleet_policy
from lab.bench.prometheus_server import RealPrometheus
from lab.bench.twin_process import TwinProcess
from lab.cli.bench import figures, measure, peak_rss_mb
from policies.loader import DEFAULT_POLICY, load_policy
from tools.backends.base import MetricSource
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.kubernetes.settings import KubernetesSettings
from tools.backends.parts import Parts
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource, TickReport
from tools.metrics.prometheus.queries import RULES_FILE

WATCH_WAIT_S = 60.0
"""How long the watches may take to see what one step of the world published (untimed: on a
shared machine under load the twin can take seconds to stream them)."""
SCRAPE_EVERY = "15s"
"""Prometheus's scrape and rule evaluation interval, a common one: a reading is at most ~30 s
old (the loop's default `metrics.max_age_s` is 90 s)."""
EXPORTERS = ("dcgm", "engines", "kueue")
"""The twin's exporters (evals/twin/exporters.py), each a scrape job."""


def bench_figures(
    nodes: int, runs: int, churn: float = DEFAULT_CHURN, metrics: str | None = None
) -> dict[str, Any]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with (
        tempfile.TemporaryDirectory(prefix="steward-bench-k8s-") as tmp,
        TwinProcess(nodes, scrape_interval_s(churn), stamped=metrics is None) as twin,
        _prometheus(Path(tmp), twin.url, metrics) as prometheus,
    ):
        settings = KubernetesSettings(server=twin.url, in_cluster=False, sync_timeout_s=300)
        cluster = KubernetesCluster(settings)
        source = (
            PrometheusSource(PrometheusSettings(url=prometheus.url))
            if prometheus is not None
            else None
        )
        reports: list[TickReport] = []
        cpu_ms: list[float] = []
        """Each timed tick's CPU time (every thread of this process): what a tick costs apart
        from waiting for a core on a shared machine."""
        try:
            cluster.start()
            lists_at_start = cluster.lists
            policy = _fleet_policy() or load_policy(DEFAULT_POLICY)
            sources: tuple[MetricSource, ...] = () if source is None else (source,)
            runtime = Runtime.open(Path(tmp), Parts.of(cluster, sources), policy)

            names = sorted(cluster.caches["nodes"].objects)
            beat = round(len(names) * churn)
            turn = [0]

            def between() -> None:
                """What `Runtime.tick` does after a decision (`housekeep`: the saves due and
                the garbage collector at rest), 15 s of the world, CHURN of the kubelets
                posting their status; then the watch events those made are taken in."""
                runtime.housekeep()
                rv = twin.advance(INTERVAL_S)
                start = (turn[0] * beat) % len(names)
                turn[0] += 1
                if beat:
                    rv = twin.heartbeat(names[start : start + beat])
                for name, cache in cluster.caches.items():  # up to a bookmark, if nothing moved
                    if not cache.wait_rv(rv, WATCH_WAIT_S):
                        raise RuntimeError(
                            f"the {name} watch cache is still below resourceVersion {rv} after "
                            f"{WATCH_WAIT_S:g} s: the tick would be timed with events streaming in"
                        )
                if source is not None and source.last_tick is not None:
                    reports.append(source.last_tick)

            try:
                runtime.start()
                first = measure("first", runtime.decide, 1)
                lists_after_first = cluster.lists
                load_before = os.getloadavg()[0]
                tick = measure("tick", runtime.decide, runs, setup=between, cpu_ms=cpu_ms)
                load_after = os.getloadavg()[0]
                if source is not None and source.last_tick is not None:
                    reports.append(source.last_tick)
            finally:
                runtime.close()
            events = sum(c.events for c in cluster.caches.values())
            out: dict[str, Any] = {
                "name": "loop",
                "backend": "kubernetes",
                "nodes": nodes,
                "gpus": nodes * 8,
                "pods": len(cluster.caches["pods"].objects),
                "runs": runs,
                "churn": churn,
                "median_ms": tick.median_ms,
                "p99_ms": tick.p99_ms,
                "tick": tick.model_dump(),
                "tick_cpu": figures("tick_cpu", cpu_ms).model_dump(),
                "load_average": [round(load_before, 2), round(load_after, 2)],
                "first_tick_ms": first.median_ms,
                "lists_at_start": lists_at_start,
                "relists": cluster.lists - lists_after_first,
                "watch_events": events,
                "api_requests": twin.request_count(),
                "peak_rss_mb": round(peak_rss_mb(), 1),
            }
            if source is not None:
                out["metrics"] = "prometheus"
                out["prometheus"] = _source_figures(reports[-runs:])
                out["targets"] = {"p99_ms": TARGET_P99_MS, "peak_rss_mb": TARGET_RSS_MB}
                out["within_targets"] = (
                    tick.p99_ms <= TARGET_P99_MS and out["peak_rss_mb"] <= TARGET_RSS_MB
                )
            return out
        finally:
            if source is not None:
                source.close()
            cluster.close()


TARGET_P99_MS = 1000.0
TARGET_RSS_MB = 400.0
"""With Prometheus, at 1,000 nodes / 8,000 cards: a whole tick's p99, and the peak memory."""


@contextlib.contextmanager
def _prometheus(
    workdir: Path, twin_url: str, metrics: str | None
) -> Iterator[RealPrometheus | None]:
    """A real Prometheus scraping the twin's exporters with Steward's recording rules (None
    without `metrics`)."""
    if metrics is None:
        yield None
        return
    address = twin_url.removeprefix("http://")
    jobs = [
        {
            "job_name": name,
            "metrics_path": f"/twin/exporters/{name}/metrics",
            "scrape_timeout": SCRAPE_EVERY,
            "static_configs": [{"targets": [address]}],
        }
        for name in EXPORTERS
    ]
    with RealPrometheus(workdir, [], SCRAPE_EVERY, jobs=jobs, rules=(RULES_FILE,)) as prometheus:
        prometheus.wait_until_up(len(EXPORTERS))
        prometheus.wait_for_scrapes(2, timeout_s=60)
        prometheus.wait_for_rules(timeout_s=60)
        yield prometheus


def _source_figures(reports: list[TickReport]) -> dict[str, Any]:
    """The source's part of the timed ticks: queries and join, series, families from rules."""
    if not reports:
        return {}
    last = reports[-1]
    return {
        "query": figures("query", [r.query_ms for r in reports]).model_dump(),
        "join": figures("join", [r.join_ms for r in reports]).model_dump(),
        "series_per_tick": last.series,
        "node_series_per_tick": last.node_series,
        "unmatched": last.unmatched,
        "failed": last.failed,
        "from_rules": last.from_rules,
    }
