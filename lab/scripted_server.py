"""An OpenAI-compatible HTTP server on loopback whose answers each test scripts.

It speaks the real protocol — `GET /v1/models`, `POST /v1/chat/completions` with the response
shapes the openai client parses — so the planner under test goes through its real client,
retries and timeouts. Each request takes the next scripted `Reply`: a tool call, content, an
HTTP error (429 with Retry-After, 500 …), a delay past the client's timeout, a body that is
not JSON, a body trickled out a byte at a time, or one of the malformed HTTP-200 answers in
`BAD_SHAPES` (a null message, `choices` as a string, an array body, arguments as an object, a
call without a function name, negative or textual token counts). Every request body is kept
for the test to inspect. A request past the end of the script gets HTTP 500, so an unexpected
extra request shows. Also used by `steward bench chaos` for its bad-LLM faults.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
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
    prompt_tokens: object = 100
    completion_tokens: object = 20
    """Token counts as sent: a test may send what no server should (-1, "12")."""
    trickle_s: float = 0.0
    """Seconds between the body's bytes: an answer that keeps arriving, one byte at a time."""
    shape: str = ""
    """A key of BAD_SHAPES: the completion rewritten into that malformed answer."""


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


def trickle(reply: Reply, every_s: float = 0.05) -> Reply:
    """`reply` sent one byte every `every_s` seconds."""
    return replace(reply, trickle_s=every_s)


def hang(seconds: float = 600.0) -> Reply:
    """An answer that does not come (headers included) for `seconds`."""
    return Reply(delay_s=seconds)


def bad(shape: str) -> Reply:
    """A malformed HTTP-200 answer (a key of BAD_SHAPES)."""
    if shape not in BAD_SHAPES:
        raise KeyError(f"no bad shape {shape!r}; choose one of {sorted(BAD_SHAPES)}")
    return Reply(shape=shape, tool_calls=(("submit_plan", '{"actions": [], "rationale": "x"}'),))


def _null_message(body: dict[str, Any]) -> object:
    body["choices"][0]["message"] = None
    return body


def _choices_as_string(body: dict[str, Any]) -> object:
    body["choices"] = "none today"
    return body


def _array_body(body: dict[str, Any]) -> object:
    return [body]


def _arguments_as_object(body: dict[str, Any]) -> object:
    function = body["choices"][0]["message"]["tool_calls"][0]["function"]
    function["arguments"] = json.loads(function["arguments"])
    return body


def _missing_function_name(body: dict[str, Any]) -> object:
    del body["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
    return body


def _negative_tokens(body: dict[str, Any]) -> object:
    body["usage"]["prompt_tokens"] = -5
    return body


def _string_tokens(body: dict[str, Any]) -> object:
    body["usage"]["completion_tokens"] = "twenty"
    return body


def _empty_choices(body: dict[str, Any]) -> object:
    body["choices"] = []
    return body


BAD_SHAPES: dict[str, Callable[[dict[str, Any]], object]] = {
    "null_message": _null_message,
    "choices_as_string": _choices_as_string,
    "array_body": _array_body,
    "arguments_as_object": _arguments_as_object,
    "missing_function_name": _missing_function_name,
    "negative_tokens": _negative_tokens,
    "string_tokens": _string_tokens,
    "empty_choices": _empty_choices,
}
"""HTTP-200 answers that break the protocol, each as a rewrite of a well-formed completion."""


def error(status: int, message: str = "scripted error", **headers: str) -> Reply:
    return Reply(status=status, error=message, headers=headers)


def submit(actions: list[dict[str, Any]], rationale: str = "scripted") -> Reply:
    return call("submit_plan", {"actions": actions, "rationale": rationale})


class ScriptedServer:
    """Start with `with ScriptedServer([...]) as server:`; `server.base_url` is the endpoint."""

    def __init__(
        self,
        replies: list[Reply] | None = None,
        source: Callable[[], Reply] | None = None,
        responder: Callable[[dict[str, Any]], Reply] | None = None,
    ) -> None:
        self.replies: deque[Reply] = deque(replies or ())
        self.source = source
        """Where replies come from once the script is used up (an endless chaos feed)."""
        self.responder = responder
        """A model stub that reads each request (its messages and tools) and answers it; used
        once the script is used up, after `source`. It runs in the request's thread, outside
        the server's lock, so it may wait."""
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        """When each chat completion was asked (time.monotonic())."""
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self.closing = threading.Event()
        """Set when the server stops: a trickling answer stops with it."""
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
        self.closing.set()
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
            if path.endswith("/chat/completions"):
                self.times.append(time.monotonic())
            if self.replies:
                return self.replies.popleft()
            if self.source is not None:
                return self.source()
        if self.responder is not None and path.endswith("/chat/completions"):
            return self.responder(body)
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
                    server.closing.wait(reply.delay_s)
                if reply.raw is not None:
                    self._send(reply.status, reply.raw, reply.headers, reply.trickle_s)
                elif reply.status != 200:
                    err = {
                        "error": {"message": reply.error, "type": "scripted", "code": reply.status}
                    }
                    self._json(reply.status, err, reply.headers)
                else:
                    answer: object = _completion(body, reply)
                    if reply.shape:
                        answer = BAD_SHAPES[reply.shape](_completion(body, reply))
                    self._json(200, answer, reply.headers, reply.trickle_s)

            def _json(
                self,
                status: int,
                obj: object,
                headers: dict[str, str] | None = None,
                trickle_s: float = 0.0,
            ) -> None:
                self._send(status, json.dumps(obj).encode(), headers or {}, trickle_s)

            def _send(
                self, status: int, data: bytes, headers: dict[str, str], trickle_s: float = 0.0
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k.replace("_", "-"), v)
                    self.end_headers()
                    if not trickle_s:
                        self.wfile.write(data)
                        return
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        if server.closing.wait(trickle_s):
                            return
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
        },
    }
