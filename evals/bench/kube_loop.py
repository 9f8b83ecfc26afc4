"""`steward bench loop --backend kubernetes`: one tick of the loop against the twin.

The fleet of `steward bench loop` (N nodes x 8 cards, steady demand) is served by the twin
(evals/twin) on loopback, and the loop runs on the Kubernetes backend through the official
client, as it would against a real cluster. Between two timed ticks (untimed, as on a cluster
where time passes by itself) the twin's world moves 15 s, and the backend's watch caches take
in what changed (the simulator's replicas, and `churn` of the nodes posting their status, as
kubelets do); a tick then costs what changed, not a relist. Reported besides the tick
figures: the full lists the caches made (`lists_at_start`, and `relists` after the first tick:
the target is 0) and the watch events taken in.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import structlog

from agent.cli.bench import measure, peak_rss_mb
from agent.daemon.runtime import Runtime
from evals.bench.fresh import INTERVAL_S, scrape_interval_s
from evals.bench.loop import DEFAULT_CHURN, _fleet, _fleet_policy
from evals.twin.server import Twin
from policies.loader import DEFAULT_POLICY, load_policy
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.kubernetes.settings import KubernetesSettings
from tools.backends.parts import Parts
from tools.backends.sim import SimCluster


def bench_figures(nodes: int, runs: int, churn: float = DEFAULT_CHURN) -> dict[str, Any]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="steward-bench-k8s-") as tmp:
        sim = SimCluster(_fleet(nodes, scrape_interval_s(churn)))
        with Twin(sim) as twin:
            settings = KubernetesSettings(server=twin.url, in_cluster=False, sync_timeout_s=300)
            cluster = KubernetesCluster(settings)
            try:
                cluster.start()
                lists_at_start = cluster.lists
                policy = _fleet_policy() or load_policy(DEFAULT_POLICY)
                runtime = Runtime.open(Path(tmp), Parts.of(cluster), policy)

                names = [n.name for n in sim.profile.nodes]
                beat = round(len(names) * churn)
                turn = [0]

                def between() -> None:
                    """15 s of the world; CHURN of the kubelets post their status."""
                    twin.advance(INTERVAL_S)
                    start = (turn[0] * beat) % len(names)
                    turn[0] += 1
                    if beat:
                        twin.call(lambda: twin.mirror.heartbeat(names[start : start + beat]))
                    rv = int(twin.store.rv)
                    for cache in cluster.caches.values():
                        cache.wait_rv(rv, 10.0) if cache.name in ("pods", "nodes") else None

                try:
                    runtime.start()
                    first = measure("first", runtime.decide, 1)
                    lists_after_first = cluster.lists
                    tick = measure("tick", runtime.decide, runs, setup=between)
                finally:
                    runtime.close()
                events = sum(c.events for c in cluster.caches.values())
                return {
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
                    "first_tick_ms": first.median_ms,
                    "lists_at_start": lists_at_start,
                    "relists": cluster.lists - lists_after_first,
                    "watch_events": events,
                    "api_requests": len(twin.requests),
                    "peak_rss_mb": round(peak_rss_mb(), 1),
                }
            finally:
                cluster.close()
