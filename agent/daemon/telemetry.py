"""The daemon's own numbers: Prometheus metrics and the /healthz and /metrics endpoints.

Each `Telemetry` has its own registry, so two loops in one process (the tests) never share
counters. `serve(port)` starts a small threaded HTTP server on loopback: /metrics in the
Prometheus text format, /healthz as JSON (503 once no tick has completed for three intervals).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from agent.planners.base import PlannerReport

FAILING_TICKS = 3
"""After this many failed ticks in a row /healthz answers 503."""


class Telemetry:
    """Counters and histograms of the loop."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.ticks = Counter("steward_ticks", "Ticks run.", registry=self.registry)
        self.decisions = Counter(
            "steward_decisions",
            "Proposed actions by the guard's verdict.",
            ["verdict"],
            registry=self.registry,
        )
        self.actions = Counter(
            "steward_actions",
            "Actions carried out, by type and result.",
            ["type", "ok"],
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "steward_planner_fallbacks",
            "Times the chosen planner failed and the rules planner decided.",
            ["planner"],
            registry=self.registry,
        )
        self.refused_at_execution = Counter(
            "steward_refused_at_execution",
            "Actions allowed or approved before that the guard refused when they came to run.",
            registry=self.registry,
        )
        self.findings = Gauge(
            "steward_findings",
            "Findings open now (shared card counted twice, degraded link, stale metrics ...).",
            ["kind"],
            registry=self.registry,
        )
        self.planner_tokens = Counter(
            "steward_planner_tokens",
            "Tokens a model-backed planner used, by kind (prompt, completion).",
            ["planner", "kind"],
            registry=self.registry,
        )
        self.planner_requests = Counter(
            "steward_planner_requests",
            "Requests a model-backed planner sent, retries included.",
            ["planner"],
            registry=self.registry,
        )
        self.planner_seconds = Histogram(
            "steward_planner_seconds",
            "Time a planner took for one plan.",
            ["planner"],
            buckets=(0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 30, 60),
            registry=self.registry,
        )
        self.tick_seconds = Histogram(
            "steward_tick_seconds",
            "Wall time of one tick.",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5),
            registry=self.registry,
        )
        self.last_tick_monotonic: float | None = None
        self.tick_count = 0
        self.failing_ticks = 0
        self.tick_failures = Counter(
            "steward_tick_failures",
            "Ticks whose decision a transient backend error stopped (it goes on next tick).",
            registry=self.registry,
        )
        self.interval_s = 15.0
        self.pending_approvals = Gauge(
            "steward_pending_approvals",
            "Decisions waiting for a human.",
            registry=self.registry,
        )
        self.leader = Gauge(
            "steward_leader",
            "1 while this replica leads (acts), 0 while it stands by and only observes.",
            registry=self.registry,
        )
        self.leader.set(1)
        self.leader_info: Callable[[], dict[str, object]] = lambda: {"leading": True}
        """Who leads, for /healthz (the runtime sets it from its Leadership)."""
        self.long_actions = Gauge(
            "steward_long_actions",
            "Decisions whose long action (a drain, a rotation) is still going on.",
            registry=self.registry,
        )

    def planner_report(self, report: PlannerReport) -> None:
        """Count what one model-backed decision cost."""
        self.planner_tokens.labels(planner=report.planner, kind="prompt").inc(report.prompt_tokens)
        self.planner_tokens.labels(planner=report.planner, kind="completion").inc(
            report.completion_tokens
        )
        self.planner_requests.labels(planner=report.planner).inc(report.requests)

    def tick_done(self, seconds: float, *, failed: bool = False) -> None:
        self.ticks.inc()
        self.tick_count += 1
        self.tick_seconds.observe(seconds)
        self.last_tick_monotonic = time.monotonic()
        self.failing_ticks = self.failing_ticks + 1 if failed else 0
        if failed:
            self.tick_failures.inc()

    def healthy(self) -> tuple[bool, dict[str, object]]:
        """Whether ticks keep coming and succeeding, with the figures /healthz shows.

        Unhealthy when no tick completed for three intervals (the loop is stuck) or the last
        FAILING_TICKS ticks all failed (the backend has been unreachable for a while)."""
        last = self.last_tick_monotonic
        age = None if last is None else time.monotonic() - last
        fresh = age is None or age <= 3 * max(self.interval_s, 1.0)
        ok = fresh and self.failing_ticks < FAILING_TICKS
        return ok, {
            "ok": ok,
            "last_tick_age_s": age,
            "ticks": self.tick_count,
            "failing_ticks": self.failing_ticks,
            "leader": self.leader_info(),
        }

    def serve(self, port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
        """Start /metrics and /healthz on `port` (0 picks a free one) in a daemon thread."""
        telemetry = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/metrics":
                    body = generate_latest(telemetry.registry)
                    self._send(200, CONTENT_TYPE_LATEST, body)
                elif self.path == "/healthz":
                    ok, figures = telemetry.healthy()
                    self._send(200 if ok else 503, "application/json", json.dumps(figures).encode())
                else:
                    self._send(404, "text/plain", b"not found: try /metrics or /healthz\n")

            def _send(self, code: int, content_type: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        server = ThreadingHTTPServer((host, port), Handler)
        threading.Thread(target=server.serve_forever, name="steward-http", daemon=True).start()
        return server
