"""Whatever reaches /slack/events, the daemon answers it: a body that is not UTF-8, a
Content-Length that is not a number, a signed payload that is not what Slack sends each get a
400 (not a dropped connection and a traceback), and a body shorter than its Content-Length
holds a handler thread only until the read timeout (408)."""

from __future__ import annotations

import hashlib
import hmac
import socket
import time
from urllib.parse import quote

from agent.support.telemetry import Telemetry
from tests.chatops.conftest import Rig, post_event
from tests.chatops.slack_stub import SIGNING_SECRET, sign


def _raw(port: int, head: str, body: bytes = b"", wait_s: float = 10.0) -> tuple[int, float]:
    """Send a request as bytes; (its HTTP status, 0 when the connection dropped; seconds)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as conn:
        conn.sendall(head.encode() + b"\r\n" + body)
        data = b""
        try:
            while chunk := conn.recv(4096):
                data += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    line = data.split(b"\r\n", 1)[0].split()
    status = int(line[1]) if len(line) > 1 and line[1].isdigit() else 0
    return status, time.monotonic() - started


def _signed_bytes(body: bytes) -> dict[str, str]:
    ts = str(int(time.time()))
    base = f"v0:{ts}:".encode() + body
    digest = hmac.new(SIGNING_SECRET.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


def _head(length: str, headers: dict[str, str]) -> str:
    lines = [
        "POST /slack/events HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/x-www-form-urlencoded",
        f"Content-Length: {length}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return "\r\n".join(lines) + "\r\n"


def test_malformed_bodies_get_400(rig: Rig) -> None:
    port = rig.server.server_address[1]
    latin = b"payload=caf\xe9\xff"
    assert _raw(port, _head(str(len(latin)), _signed_bytes(latin)), latin)[0] == 400
    assert _raw(port, _head("abc", {}), b"x=1")[0] == 400
    assert _raw(port, _head("-5", {}), b"x=1")[0] == 400
    for payload in ("not json", "[1, 2]", '{"type": "block_actions", "actions": "none"}'):
        body = f"payload={quote(payload)}"
        assert post_event(port, body, sign(body)) == 400, payload
    # The daemon still serves: a well-formed request after all of them is answered.
    good = "command=%2Fsteward&text=status&user_id=U0VISITOR&channel_id=C0STEWARD"
    assert post_event(port, good, sign(good)) == 200


def test_a_short_body_frees_its_thread_at_the_read_timeout() -> None:
    telemetry = Telemetry()
    telemetry.read_timeout_s = 0.5
    telemetry.posts["/slack/events"] = lambda body, headers, query: (200, "text/plain", body)
    server = telemetry.serve(0)
    try:
        port = server.server_address[1]
        status, took = _raw(port, _head("1000", {}), b"only ten b")
        assert status == 408 and took < 5.0
        assert _raw(port, _head("3", {}), b"abc")[0] == 200  # the server still answers
    finally:
        server.shutdown()
        server.server_close()
