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
taken in."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import structlog

from agent.daemon.runtime import Runtime
from lab.bench.fresh import INTERVAL_S, scrape_interval_s
from lab.bench.loop import DEFAULT_CHURN, _fleet_policy
from lab.bench.twin_process import TwinProcess
from lab.cli.bench import measure, peak_rss_mb
from policies.loader import DEFAULT_POLICY, load_policy
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.kubernetes.settings import KubernetesSettings
from tools.backends.parts import Parts

WATCH_WAIT_S = 10.0
"""How long the watches may take to see what one step of the world published."""


def bench_figures(nodes: int, runs: int, churn: float = DEFAULT_CHURN) -> dict[str, Any]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with (
        tempfile.TemporaryDirectory(prefix="steward-bench-k8s-") as tmp,
        TwinProcess(nodes, scrape_interval_s(churn)) as twin,
    ):
        settings = KubernetesSettings(server=twin.url, in_cluster=False, sync_timeout_s=300)
        cluster = KubernetesCluster(settings)
        try:
            cluster.start()
            lists_at_start = cluster.lists
            policy = _fleet_policy() or load_policy(DEFAULT_POLICY)
            runtime = Runtime.open(Path(tmp), Parts.of(cluster), policy)

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
                "api_requests": twin.request_count(),
                "peak_rss_mb": round(peak_rss_mb(), 1),
            }
        finally:
            cluster.close()
