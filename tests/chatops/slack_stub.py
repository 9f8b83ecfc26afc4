"""A Slack Web API stub on loopback: the calls Steward makes, answered as Slack answers them.

aiohttp serves `/api/auth.test`, `chat.postMessage`, `chat.update`, `chat.postEphemeral` and
`apps.connections.open`, which hands out a `ws://` URL of this same server; the WebSocket there
says `hello` as Slack's does, then carries the envelopes a test pushes and records the acks the
app sends back. Every call is recorded (method, parameters, token). `down = True` answers every
Web API call with 503, as a Slack outage does; `sign` makes the headers Slack signs a request
with (v0, HMAC-SHA256 over "v0:{timestamp}:{body}").
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import WSMsgType, web

BOT_TOKEN = "xoxb-test-bot"
APP_TOKEN = "xapp-test-app"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0STEWARD"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str


@dataclass
class SlackStub:
    """The stub's state; `start()` serves it on a free loopback port in a thread."""

    calls: list[Call] = field(default_factory=list)
    acks: list[dict[str, Any]] = field(default_factory=list)
    down: bool = False
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _sockets: list[web.WebSocketResponse] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def start(self) -> SlackStub:
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_post("/api/{method}", self._api)
            app.router.add_get("/link", self._link)
            self._runner = web.AppRunner(app)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", self.port)
            loop.run_until_complete(site.start())
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())

        threading.Thread(target=serve, name="slack-stub", daemon=True).start()
        assert ready.wait(10), "the Slack stub did not start"
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)

    # -- what tests look at -----------------------------------------------------------------------

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, check: Callable[[], Any], timeout: float = 15.0) -> Any:
        """Poll until `check()` is truthy (Bolt's listeners run after the ack, in a thread)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting; calls so far: {[c.method for c in self.calls]}")

    def push(self, envelope: dict[str, Any]) -> None:
        """Send a Socket Mode envelope to every connected app."""
        assert self._loop is not None
        text = json.dumps(envelope)
        for ws in list(self._sockets):
            asyncio.run_coroutine_threadsafe(ws.send_str(text), self._loop).result(5)

    def connected(self) -> int:
        return len(self._sockets)

    # -- the server -------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        raw = await request.text()
        if request.content_type == "application/json" and raw:
            params: dict[str, Any] = json.loads(raw)
        else:
            params = dict(parse_qsl(raw)) | dict(request.query)
        with self._lock:
            self.calls.append(Call(method, params, token))
        if self.down:
            return web.json_response({"ok": False, "error": "service_unavailable"}, status=503)
        expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
        if token != expected:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        return web.json_response(self._answer(method, params))

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {"ok": True, "url": "https://steward-test.slack.com/", "team": "test",
                    "user": "steward", "team_id": "T0TEST", "user_id": "U0BOT",
                    "bot_id": "B0BOT"}  # fmt: skip
        if method == "apps.connections.open":
            return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"}
        if method in ("chat.postMessage", "chat.update"):
            ts = params.get("ts") or f"{1_764_000_000 + next(self._ts)}.000100"
            return {"ok": True, "channel": params.get("channel"), "ts": ts,
                    "message": {"text": params.get("text", ""), "ts": ts}}  # fmt: skip
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"{1_764_000_000 + next(self._ts)}.000200"}
        return {"ok": False, "error": "unknown_method"}

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1,
                                      "debug_info": {"host": "stub"},
                                      "connection_info": {"app_id": "A0TEST"}}))  # fmt: skip
        self._sockets.append(ws)
        try:
            async for msg in ws:
                if msg.type == WSMsgType.TEXT:
                    with self._lock:
                        self.acks.append(json.loads(msg.data))
        finally:
            self._sockets.remove(ws)
        return ws


def sign(body: str, timestamp: int | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """The headers Slack sends with a request: its timestamp and v0 signature."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}
