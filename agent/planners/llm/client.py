"""The model endpoint as the LLM planner sees it: one request out, one `Turn` back, on a deadline.

It speaks to any OpenAI-compatible server through the openai client, in one of three output
modes: `tools` (function calling), `json_schema` (OpenAI's structured output) or `json_object`
with a schema (llama.cpp's form). A server that refuses `json_schema` with a 400/500 naming
response_format — llama-cpp-python's does — is downgraded to `json_object` for good; one that
refuses tools, to `json_schema`. Timeouts, connection errors, 429 and 5xx are retried with
jittered exponential backoff (honouring Retry-After), at most MAX_ATTEMPTS times and never past
the decision's deadline — except a 500 that is the server's validation error of the request
(llama-cpp-python's way of saying 422), which no retry can fix; after that, or on any other
error, `PlannerFailed` says why. The openai client's own retries are off: the
deadline is ours to keep. Each exchange is bounded in wall-clock time, body included
(transfer.py), and every body is validated against the protocol before it is read
(wire.py): an answer of the wrong shape is a `PlannerFailed`, never an exception that
escapes the planner.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import openai
from openai import OpenAI
from pydantic import BaseModel, ConfigDict
from tenacity import RetryCallState, Retrying, retry_if_exception

from agent.planners.base import PlannerReport
from agent.planners.errors import PlannerFailed
from agent.planners.llm import tool_calls
from agent.planners.llm.settings import LLMSettings, OutputMode
from agent.planners.llm.transfer import TooSlow, fetch
from agent.planners.llm.wire import WireCompletion, WireModels, parse

_TRANSIENT = (
    TooSlow,
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
)
MAX_ATTEMPTS = 5
"""Requests sent for one turn at most, retries included (the deadline usually stops sooner)."""
_DOWNGRADE: dict[OutputMode, tuple[OutputMode, tuple[str, ...]]] = {
    "json_schema": ("json_object", ("response_format", "json_schema")),
    "tools": ("json_schema", ("tool",)),
}


class Deadline:
    """Seconds left of one decision, on an injectable monotonic clock."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.ends = self.started + seconds

    def left(self) -> float:
        return self.ends - self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.started


class Call(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str


class Turn(BaseModel):
    """What the model answered in one request: tool calls (tools mode) or content (JSON modes)."""

    model_config = ConfigDict(frozen=True)

    calls: tuple[Call, ...] = ()
    content: str | None = None
    mode: OutputMode


class Usage(BaseModel):
    """Running totals of one decision."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0


def _refused_request(exc: openai.APIStatusError) -> bool:
    """A 500 that is the server refusing the request's shape (llama-cpp-python answers its
    validation errors with 500): sending it again cannot help."""
    return exc.status_code == 500 and "validation error" in f"{exc.message} {exc.body}".lower()


def _downgrade_for(mode: OutputMode, exc: openai.APIStatusError) -> OutputMode | None:
    """The mode to fall back to when a 400/500 says the server cannot do `mode`."""
    if mode not in _DOWNGRADE or exc.status_code not in (400, 422, 500):
        return None
    target, words = _DOWNGRADE[mode]
    text = f"{exc.message} {exc.body}".lower()
    return target if any(w in text for w in words) else None


def _arriving(exc: TooSlow) -> str:
    if exc.received:
        return f"the answer still arriving ({exc.received} byte(s) in {exc.seconds:.1f} s)"
    return f"no answer in {exc.seconds:.1f} s"


def _what_failed(exc: BaseException) -> str:
    if isinstance(exc, TooSlow):
        return f"timed out, {_arriving(exc)}"
    if isinstance(exc, openai.OpenAIError):
        return _what(exc)
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    try:
        return float(header) if header else None
    except ValueError:
        return None


class Endpoint:
    """One OpenAI-compatible server and its output mode, which may downgrade once learnt."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.settings = settings
        self.mode: OutputMode = settings.output
        self.model: str | None = settings.model
        self.sleep = sleep
        self.rng = rng or random.Random(0)
        key = settings.api_key.get_secret_value() if settings.api_key else "not-needed"
        self.client = OpenAI(
            base_url=settings.base_url, api_key=key, max_retries=0, timeout=settings.timeout_s
        )
        self.base_url = str(self.client.base_url)
        self.required_honoured = settings.tool_choice == "required"
        """False once the server answered tool_choice="required" without a tool call."""

    def report(
        self,
        usage: Usage,
        deadline: Deadline,
        lookups: Sequence[str],
        failure: str | None,
        repairs: int = 0,
    ) -> PlannerReport:
        """What one exchange with the model over this endpoint cost and how it went, for the
        decision log: a plan's (`LLMPlanner`) and a person's question's (`Asker`) alike."""
        return PlannerReport(
            planner="llm",
            model=self.model,
            endpoint=self.base_url,
            output_mode=self.mode,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            latency_s=round(max(0.0, deadline.elapsed()), 4),
            requests=usage.requests,
            lookups=tuple(lookups),
            repairs=repairs,
            failure=failure,
        )

    def resolve_model(self, deadline: Deadline, usage: Usage) -> str:
        """The configured model, or the first one the endpoint lists."""
        if self.model is None:
            models = self.client.models.with_streaming_response
            body = self._send(lambda t: fetch(lambda: models.list(timeout=t), t), deadline, usage)
            names = [m.id for m in parse(WireModels, body, self.base_url).data]
            if not names:
                raise PlannerFailed(f"{self.base_url}: lists no model; set STEWARD_LLM_MODEL")
            self.model = names[0]
        return self.model

    def ask(
        self,
        messages: list[dict[str, Any]],
        names: tuple[str, ...],
        *,
        force: str | None,
        deadline: Deadline,
        usage: Usage,
    ) -> Turn:
        """One model turn offering the tools `names`; `force` makes one of them mandatory."""
        model = self.resolve_model(deadline, usage)
        while True:
            mode = self.mode
            request = self._request(mode, messages, names, force)

            def create(timeout: float, request: dict[str, Any] = request) -> bytes:
                chat = self.client.chat.completions.with_streaming_response
                return fetch(
                    lambda: chat.create(
                        model=model,
                        messages=messages,  # type: ignore[arg-type]
                        timeout=timeout,
                        **request,
                    ),
                    timeout,
                )

            try:
                body = self._send(create, deadline, usage)
            except openai.APIStatusError as exc:
                lower = _downgrade_for(mode, exc)
                if lower is None:
                    raise self._failed(exc, usage, deadline) from exc
                self.mode = lower
                continue
            return self._turn(parse(WireCompletion, body, self.base_url), mode, usage)

    def _request(
        self,
        mode: OutputMode,
        messages: list[dict[str, Any]],
        names: tuple[str, ...],
        force: str | None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "max_tokens": self.settings.max_tokens,
            "temperature": self.settings.temperature,
        }
        if mode == "tools":
            request["tools"] = tool_calls.tool_specs(names)
            if force is not None:
                request["tool_choice"] = {"type": "function", "function": {"name": force}}
            else:
                request["tool_choice"] = "required"
            return request
        offered = (force,) if force is not None else names
        schema = tool_calls.envelope_schema(offered)
        if mode == "json_schema":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "tool_call", "schema": schema, "strict": False},
            }
        else:
            request["extra_body"] = {"response_format": {"type": "json_object", "schema": schema}}
        return request

    def _turn(self, completion: WireCompletion, mode: OutputMode, usage: Usage) -> Turn:
        if completion.usage is not None:
            usage.prompt_tokens += completion.usage.prompt_tokens or 0
            usage.completion_tokens += completion.usage.completion_tokens or 0
        message = completion.choices[0].message
        calls = tuple(
            Call(id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "")
            for i, c in enumerate(message.tool_calls or ())
        )
        return Turn(calls=calls, content=message.content, mode=mode)

    def _send(self, request: Callable[[float], bytes], deadline: Deadline, usage: Usage) -> bytes:
        """`request(timeout)` retried on transient errors until the deadline."""

        def hinted(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            return (_retry_after(exc) if exc else None) or 0.0

        def wait(state: RetryCallState) -> float:
            backoff = min(2.0, 0.25 * 2.0 ** (state.attempt_number - 1))
            jittered = backoff * (0.5 + self.rng.random())
            return min(max(jittered, hinted(state)), max(0.0, deadline.left() - 0.05))

        def stop(state: RetryCallState) -> bool:
            return (
                state.attempt_number >= MAX_ATTEMPTS
                or deadline.left() < 0.1
                or hinted(state) >= deadline.left()
            )

        def retryable(exc: BaseException) -> bool:
            if isinstance(exc, openai.APIStatusError) and (
                _downgrade_for(self.mode, exc) or _refused_request(exc)
            ):
                return False
            return isinstance(exc, _TRANSIENT)

        retrying = Retrying(
            retry=retry_if_exception(retryable),
            wait=wait,
            stop=stop,
            sleep=self.sleep,
            reraise=True,
        )
        last: list[str] = []
        try:
            for attempt in retrying:
                with attempt:
                    left = deadline.left()
                    if left <= 0.05:
                        raise PlannerFailed(
                            f"{self.base_url}: deadline of {self.settings.deadline_s:g} s reached"
                            + (f" after {usage.requests} request(s): {last[-1]}" if last else "")
                        )
                    usage.requests += 1
                    bound = min(self.settings.timeout_s, left)
                    try:
                        return request(bound)
                    except TooSlow as exc:
                        if bound >= left:
                            raise PlannerFailed(
                                f"{self.base_url}: timed out at the deadline of "
                                f"{self.settings.deadline_s:g} s, {_arriving(exc)} after "
                                f"{usage.requests} request(s)"
                            ) from exc
                        last.append(_what_failed(exc))
                        raise
                    except openai.OpenAIError as exc:
                        last.append(_what(exc))
                        raise
        except openai.APIStatusError as exc:
            if _downgrade_for(self.mode, exc) is not None:
                raise  # ask() switches the output mode and asks again
            raise self._failed(exc, usage, deadline) from exc
        except _TRANSIENT as exc:
            raise self._failed(exc, usage, deadline) from exc
        except openai.OpenAIError as exc:
            raise PlannerFailed(f"{self.base_url}: {type(exc).__name__}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise PlannerFailed(f"{self.base_url}: the answer is not JSON: {exc}") from exc
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _failed(self, exc: BaseException, usage: Usage, deadline: Deadline) -> PlannerFailed:
        what = _what_failed(exc)
        if isinstance(exc, _TRANSIENT):  # the time it really took, not the deadline it had
            what += (
                f" ({usage.requests} request(s) in {max(0.0, deadline.elapsed()):.1f} s; "
                f"deadline {self.settings.deadline_s:g} s)"
            )
        return PlannerFailed(f"{self.base_url}: {what}")

    def probe(self, seconds: float) -> str | None:
        """One request (the model list), at most `seconds`: None when the endpoint answers,
        else why not. A server without a model list (404) answers, when a model is named."""
        models = self.client.models.with_streaming_response
        started = time.monotonic()
        try:
            body = fetch(lambda: models.list(timeout=seconds), seconds)
        except openai.APIStatusError as exc:
            if exc.status_code in (404, 405) and self.model is not None:
                return None
            return f"{_what(exc)} ({time.monotonic() - started:.1f} s)"
        except (TooSlow, openai.OpenAIError, PlannerFailed) as exc:
            return f"{_what_failed(exc)} ({time.monotonic() - started:.1f} s)"
        if self.model is None:
            try:
                names = [m.id for m in parse(WireModels, body, self.base_url).data]
            except PlannerFailed as exc:
                return exc.reason
            if not names:
                return "it lists no model; set STEWARD_LLM_MODEL"
            self.model = names[0]
        return None


def _what(exc: openai.OpenAIError) -> str:
    """One error in a few words, for the reason the log records."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message[:200]}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "could not connect"
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def append_turn(
    messages: list[dict[str, Any]],
    turn: Turn,
    calls: list[Call],
    results: list[str],
    repair: str | None = None,
) -> None:
    """The model's turn and what came of it, in the shape its output mode expects."""
    if turn.mode == "tools" and calls and all(c.id not in ("content", "json") for c in calls):
        messages.append(
            {
                "role": "assistant",
                # A string, never null: llama-cpp-python's server refuses null content (HTTP 500).
                "content": turn.content or "",
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in calls
                ],
            }
        )
        for call, result in zip(calls, results, strict=False):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return
    messages.append({"role": "assistant", "content": turn.content or ""})
    if repair is not None:
        messages.append({"role": "user", "content": repair})
        return
    for call, result in zip(calls, results, strict=False):
        messages.append({"role": "user", "content": f"Result of {call.name}:\n{result}"})
