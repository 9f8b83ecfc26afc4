"""The daemon's own numbers: Prometheus metrics and the /healthz and /metrics endpoints.

Each `Telemetry` has its own registry, so two loops in one process (the tests) never share
counters. `serve(port)` starts a small threaded HTTP server on loopback: /metrics in the
Prometheus text format, /healthz as JSON. /healthz answers 503 (not ready) until the first tick
has completed — a daemon stuck in its first tick is not healthy — while a tick runs past its
bound, once no tick has completed for three intervals, and after FAILING_TICKS failed ticks.
/metrics carries `steward_audit_head{hash=…}` = the decision log's last seq, so that a witness
outside the data dir can hold the head and catch a log cut or replaced behind its back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Protocol

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from agent.support.leadership import Leadership

PostHandler = Callable[[bytes, Mapping[str, str], str], tuple[int, str, bytes]]
"""(body, headers, query string) -> (status, content type, body)."""

log = structlog.get_logger("steward.http")
MAX_POST_BYTES = 1 << 20
READ_TIMEOUT_S = 10.0
"""The longest a request may take to arrive: a body shorter than its Content-Length (or a
client that stops sending) frees its handler thread after this, with a 408."""
"""A POST body larger than this is refused unread (Slack's payloads are a few kB)."""

FAILING_TICKS = 3
"""After this many failed ticks in a row /healthz answers 503."""
MIN_TICK_BOUND_S = 30.0
"""A tick may take this long at least before it counts as overrunning (an LLM decision's
deadline fits in it); longer intervals give it three intervals."""

Head = Callable[[], tuple[int, str] | None]
"""The decision log's head: (last seq, its hash), None while it is empty."""


class SignedHead(Protocol):
    """The log's whole head as a witness outside the data dir holds it
    (agent.audit.head_file.HeadRecord)."""

    @property
    def seq(self) -> int: ...
    @property
    def hash(self) -> str: ...
    @property
    def mac(self) -> str | None: ...


class ModelCost(Protocol):
    """What one model-backed decision cost (agent.planners.base.PlannerReport)."""

    @property
    def planner(self) -> str: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def requests(self) -> int: ...


class _AuditHead(Collector):
    """`steward_audit_head`, read from the log at scrape time (never a stale copy)."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "steward_audit_head",
            "The decision log's last seq; its hash in the label (an outside witness holds it).",
            labels=["hash"],
        )
        read = self.telemetry.audit_head
        head = read() if read is not None else None
        if head is not None:
            family.add_metric([head[1]], float(head[0]))
        yield family
        signed = GaugeMetricFamily(
            "steward_audit_head_mac",
            "The decision log's last seq with its hash and HMAC (STEWARD_AUDIT_KEY) in the "
            "labels: the whole head for a witness outside the data dir (empty while unsigned).",
            labels=["hash", "mac"],
        )
        outside = self.telemetry.audit_outside_head
        whole = outside() if outside is not None else None
        if whole is not None and whole.mac is not None:
            signed.add_metric([whole.hash, whole.mac], float(whole.seq))
        yield signed


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
            "1 while this replica leads (acts), 0 while it stands by and only observes; "
            "labelled with the replica's identity (its name in the Lease).",
            ["identity"],
            registry=self.registry,
        )
        self.leader_info: Callable[[], dict[str, object]] = lambda: {"leading": True}
        """Who leads, for /healthz (`follow` sets it from the runtime's Leadership)."""
        self.long_actions = Gauge(
            "steward_long_actions",
            "Decisions whose long action (a drain, a rotation) is still going on.",
            registry=self.registry,
        )
        self.posts: dict[str, PostHandler] = {}
        """POST routes other parts add to the daemon's port (Slack's /slack/events)."""
        self.min_tick_bound_s = MIN_TICK_BOUND_S
        self.tick_started_monotonic: float | None = None
        """When the tick now running began; None between ticks."""
        self.audit_head: Head | None = None
        self.audit_outside_head: Callable[[], SignedHead | None] | None = None
        self.registry.register(_AuditHead(self))

    def follow(self, leadership: Leadership) -> None:
        """Say who leads as `leadership` knows it now, at every scrape of /metrics and /healthz
        (not as of the last tick: a standby that took over between ticks shows at once)."""
        self.leader_info = leadership.describe
        child = self.leader.labels(identity=leadership.identity)
        child.set_function(lambda: 1.0 if leadership.leading() else 0.0)

    @property
    def tick_bound_s(self) -> float:
        """How long one tick may run before /healthz calls it stuck."""
        return max(3 * self.interval_s, self.min_tick_bound_s)

    def tick_started(self) -> None:
        self.tick_started_monotonic = time.monotonic()

    def planner_report(self, report: ModelCost) -> None:
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
        self.tick_started_monotonic = None
        self.failing_ticks = self.failing_ticks + 1 if failed else 0
        if failed:
            self.tick_failures.inc()

    def healthy(self) -> tuple[bool, dict[str, object]]:
        """Whether ticks keep coming and succeeding, with the figures /healthz shows.

        Not ready before the first tick completed; unhealthy while a tick runs past
        `tick_bound_s`, when no tick completed for three intervals (the loop is stuck) or the
        last FAILING_TICKS ticks all failed (the backend has been unreachable for a while)."""
        now = time.monotonic()
        last = self.last_tick_monotonic
        age = None if last is None else now - last
        started = self.tick_started_monotonic
        running = None if started is None else now - started
        reason = None
        if running is not None and running > self.tick_bound_s:
            reason = f"a tick has run {running:.0f} s, over its bound of {self.tick_bound_s:g} s"
        elif age is None:
            reason = "no tick has completed yet"
        elif age > 3 * max(self.interval_s, 1.0):
            reason = f"no tick completed for {age:.0f} s"
        elif self.failing_ticks >= FAILING_TICKS:
            reason = f"the last {self.failing_ticks} ticks failed"
        ok = reason is None
        return ok, {
            "ok": ok,
            "ready": age is not None,
            "reason": reason,
            "last_tick_age_s": age,
            "tick_running_s": running,
            "ticks": self.tick_count,
            "failing_ticks": self.failing_ticks,
            "leader": self.leader_info(),
        }

    read_timeout_s: float = READ_TIMEOUT_S

    def serve(self, port: int, host: str = "127.0.0.1") -> ThreadingHTTPServer:
        """Start /metrics and /healthz on `port` (0 picks a free one) in a daemon thread."""
        telemetry = self

        class Handler(BaseHTTPRequestHandler):
            timeout = telemetry.read_timeout_s  # every read on the socket, headers included

            def do_GET(self) -> None:
                if self.path == "/metrics":
                    body = generate_latest(telemetry.registry)
                    self._send(200, CONTENT_TYPE_LATEST, body)
                elif self.path == "/healthz":
                    ok, figures = telemetry.healthy()
                    self._send(200 if ok else 503, "application/json", json.dumps(figures).encode())
                else:
                    self._send(404, "text/plain", b"not found: try /metrics or /healthz\n")

            def do_POST(self) -> None:
                path, _, query = self.path.partition("?")
                route = telemetry.posts.get(path)
                if route is None:
                    self._send(404, "text/plain", b"not found\n")
                    return
                given = (self.headers.get("Content-Length") or "0").strip()
                if not given.isdigit():
                    message = f"Content-Length {given[:40]!r} is not a number of bytes\n"
                    self._refuse(400, message)
                    return
                length = int(given)
                if length > MAX_POST_BYTES:
                    self._refuse(413, "request body too large\n")
                    return
                try:
                    body = self.rfile.read(length)
                except TimeoutError:
                    self._refuse(408, "the request body did not arrive in time\n")
                    return
                if len(body) < length:
                    self._refuse(400, f"the body ended after {len(body)} of {length} bytes\n")
                    return
                try:
                    code, content_type, answer = route(body, dict(self.headers.items()), query)
                except Exception as exc:  # a route's bug must not drop the connection
                    log.exception("POST route failed", path=path)
                    self._refuse(500, f"internal error: {type(exc).__name__}\n")
                    return
                self._send(code, content_type, answer)

            def _refuse(self, code: int, message: str) -> None:
                self.close_connection = True  # what is left of the body is not read
                self._send(code, "text/plain", message.encode())

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
