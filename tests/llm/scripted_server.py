"""An OpenAI-compatible HTTP server on loopback whose answers each test scripts.

It speaks the real protocol — `GET /v1/models`, `POST /v1/chat/completions` with the response
shapes the openai client parses — so the planner under test goes through its real client,
retries and timeouts. Each request takes the next scripted `Reply`: a tool call, content, an
HTTP error (429 with Retry-After, 500 …), a delay past the client's timeout, or a body that is
not JSON. Every request body is kept for the test to inspect. A request past the end of the
script gets HTTP 500, so an unexpected extra request shows.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-model"


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    status: int = 200
    tool_calls: tuple[tuple[str, str], ...] = ()
    """(name, arguments JSON text) pairs."""
    content: str | None = None
    delay_s: float = 0.0
    raw: bytes | None = None
    """A body sent as is (e.g. not JSON) instead of a completion."""
    headers: dict[str, str] = field(default_factory=dict)
    error: str = ""
    prompt_tokens: int = 100
    completion_tokens: int = 20


def call(name: str, arguments: object) -> Reply:
    """A reply with one tool call; `arguments` is JSON-encoded unless it is already text."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(tool_calls=((name, text),))


def content(value: object) -> Reply:
    """A reply whose message content is `value` (JSON-encoded unless it is text)."""
    return Reply(content=value if isinstance(value, str) else json.dumps(value))


def envelope(name: str, arguments: object) -> Reply:
    """A JSON-mode reply: `{"tool": name, "arguments": ...}` as the content."""
    return content({"tool": name, "arguments": arguments})


def error(status: int, message: str = "scripted error", **headers: str) -> Reply:
    return Reply(status=status, error=message, headers=headers)


def submit(actions: list[dict[str, Any]], rationale: str = "scripted") -> Reply:
    return call("submit_plan", {"actions": actions, "rationale": rationale})


class ScriptedServer:
    """Start with `with ScriptedServer([...]) as server:`; `server.base_url` is the endpoint."""

    def __init__(self, replies: list[Reply] | None = None) -> None:
        self.replies: deque[Reply] = deque(replies or ())
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    @property
    def completions(self) -> list[dict[str, Any]]:
        """The chat completion request bodies received, in order."""
        return [
            r
            for r, p in zip(self.requests, self.paths, strict=True)
            if p.endswith("/chat/completions")
        ]

    def _next(self, path: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            if self.replies:
                return self.replies.popleft()
        return error(500, "the script has no more replies")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet: the tests read the recorded requests instead."""

            def do_GET(self) -> None:
                with server._lock:
                    server.requests.append({})
                    server.paths.append(self.path)
                if self.path.rstrip("/").endswith("/models"):
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": MODEL, "object": "model", "owned_by": "test"}],
                        },
                    )
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                reply = server._next(self.path, body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.raw is not None:
                    self._send(reply.status, reply.raw, reply.headers)
                elif reply.status != 200:
                    err = {
                        "error": {"message": reply.error, "type": "scripted", "code": reply.status}
                    }
                    self._json(reply.status, err, reply.headers)
                else:
                    self._json(200, _completion(body, reply))

            def _json(
                self, status: int, obj: object, headers: dict[str, str] | None = None
            ) -> None:
                self._send(status, json.dumps(obj).encode(), headers or {})

            def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k.replace("_", "-"), v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (a timeout test)

        return Handler


def _completion(request: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", MODEL),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }
