"""The LLM planner: a model reads the situation, looks closer, and proposes a typed plan.

Any OpenAI-compatible endpoint will do (`LLMSettings`: STEWARD_LLM_BASE_URL, _MODEL, _API_KEY,
_OUTPUT). One decision is a short conversation bounded in turns and in time: the system prompt
and a bounded summary (prompts.py), then up to `max_steps` turns in which the model may call
read-only look-ups and must end with `submit_plan` (tool_calls.py). The last turn forces
submit_plan. Every call is validated by the pydantic models; an invalid one is sent back once
with its validation error (the repair round); a second invalid answer, an exhausted deadline, or
an endpoint that stays down raises `PlannerFailed`, and the loop lets the rules planner decide.

The model is never on the critical path of safety: it proposes, the policy guard judges. It is
asked only when assess found something to decide, and one decision at a time. After every
`plan()` — returned or raised — `last_report` holds the decision's `PlannerReport`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from agent.audit import AuditLog
from agent.planners.base import PlannerReport
from agent.planners.errors import PlannerFailed
from agent.planners.llm.client import Call, Deadline, Endpoint, Turn, Usage, append_turn
from agent.planners.llm.lookups import Lookups
from agent.planners.llm.prompts import SYSTEM_PROMPT, question_prompt, user_prompt
from agent.planners.llm.settings import LLMSettings
from agent.planners.llm.tool_calls import (
    SUBMIT,
    TOOL_NAMES,
    CallRejected,
    SubmitPlan,
    check_plan,
    parse_call,
    parse_envelope,
    tool_specs,
)
from agent.planners.question import Question
from agent.signals.model import Signals
from policies.history import History
from policies.model import Policy
from tools.actions import Plan
from tools.errors import InvalidInput
from tools.model import ClusterState

MAX_CALLS_PER_TURN = 4
"""Tool calls handled from one answer; more are refused (a model looping on look-ups)."""


def first_request(
    state: ClusterState,
    signals: Signals,
    policy: Policy | None,
    question: Question | None = None,
) -> dict[str, Any]:
    """The messages and tools of a decision's first turn (what `bench llm-prompt` counts); a
    deliberation adds its question (agent/loop/questions.py) to the user message."""
    prompt = user_prompt(state, signals, policy)
    if question is not None:
        prompt += "\n" + question_prompt(question.ask, question.facts, question.rules_actions)
    return {
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ],
        "tools": tool_specs(TOOL_NAMES),
    }


class _Decision:
    """The mutable course of one decision: messages, usage, look-ups, repairs."""

    def __init__(
        self,
        state: ClusterState,
        signals: Signals,
        policy: Policy | None,
        question: Question | None = None,
    ) -> None:
        self.messages: list[dict[str, Any]] = first_request(state, signals, policy, question)[
            "messages"
        ]
        self.usage = Usage()
        self.lookups: list[str] = []
        self.repairs = 0


class LLMPlanner:
    """Plans through an OpenAI-compatible model; raises PlannerFailed when it cannot."""

    name = "llm"

    def __init__(
        self,
        settings: LLMSettings | None = None,
        *,
        policy: Policy | None = None,
        history: Callable[[], History] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings or LLMSettings()
        if not self.settings.base_url:
            raise InvalidInput(NO_ENDPOINT)
        self.policy = policy
        self.history = history
        self.audit: Callable[[], AuditLog] | None = None
        """The decision log, for the search_audit and explain_decision look-ups (the daemon
        gives its own; `steward ask` a reader)."""
        self.clock = clock
        self.endpoint = Endpoint(self.settings, sleep=sleep)
        self.last_report: PlannerReport | None = None
        self.last_transcript: list[dict[str, Any]] = []
        """The messages of the last decision, the model's final answer included."""
        self._in_flight = threading.Lock()

    def probe(self) -> str | None:
        """Whether the endpoint answers one request now (at most the request timeout, and
        PROBE_S): None if it does, else why not — for the warning `steward run` prints at start."""
        return self.endpoint.probe(min(self.settings.timeout_s, PROBE_S))

    @property
    def model(self) -> str | None:
        """The model asked (None until the endpoint has named one)."""
        return self.endpoint.model

    def plan(self, state: ClusterState, signals: Signals) -> Plan:
        if not signals.needs_decision:
            self.last_report = PlannerReport(planner=self.name, endpoint=self.endpoint.base_url)
            return Plan(rationale="nothing to decide", planner=self.name)
        return self._run(state, signals, None)

    def deliberate(self, state: ClusterState, signals: Signals, question: Question) -> Plan:
        """Answer one judgment question (agent/loop/questions.py) with a plan; raises
        PlannerFailed when the model cannot, within the deadline."""
        return self._run(state, signals, question)

    def _run(self, state: ClusterState, signals: Signals, question: Question | None) -> Plan:
        if not self._in_flight.acquire(blocking=False):
            raise PlannerFailed("another LLM decision is still in flight")
        deadline = Deadline(self.settings.deadline_s, self.clock)
        decision = _Decision(state, signals, self.policy, question)
        failure: str | None = None
        try:
            return self._decide(state, signals, decision, deadline)
        except PlannerFailed as exc:
            failure = exc.reason
            raise
        except Exception as exc:
            # Whatever a model or its server does must not crash the agent: an answer that
            # got past every check and still broke something is one more failed decision.
            failure = f"unexpected {type(exc).__name__} while planning: {str(exc)[:200]}"
            raise PlannerFailed(failure) from exc
        finally:
            self._in_flight.release()
            self.last_transcript = list(decision.messages)
            self.last_report = self.endpoint.report(
                decision.usage, deadline, decision.lookups, failure, decision.repairs
            )

    def _decide(
        self, state: ClusterState, signals: Signals, decision: _Decision, deadline: Deadline
    ) -> Plan:
        lookups = Lookups(state, self.policy, self.history, signals=signals, audit=self.audit)
        probes = 0
        turn_no = 0
        # The repair round and the one turn that finds out a server ignores "required" come on
        # top of max_steps; each happens at most once, so a decision is still bounded.
        while turn_no < (budget := self.settings.max_steps + decision.repairs + probes):
            force = SUBMIT if turn_no == budget - 1 or not self.endpoint.required_honoured else None
            names = (SUBMIT,) if force else TOOL_NAMES
            turn = self.endpoint.ask(
                decision.messages, names, force=force, deadline=deadline, usage=decision.usage
            )
            turn_no += 1
            try:
                calls = self._calls(turn, force)
            except _NotHonoured:
                # The server ignores tool_choice="required" (llama-cpp-python does): from now
                # on every turn names submit_plan, and this turn does not count as a repair.
                self.endpoint.required_honoured = False
                probes += 1
                continue
            except CallRejected as exc:
                self._repair(decision, turn, [], str(exc))
                continue
            plan = self._answer(state, decision, turn, calls, lookups)
            if plan is not None:
                return plan
        raise PlannerFailed(f"no valid plan within {self.settings.max_steps} model turns")

    def _calls(self, turn: Turn, force: str | None) -> list[Call]:
        if turn.mode != "tools":
            name, arguments = parse_envelope(turn.content)
            return [Call(id="json", name=name, arguments=arguments)]
        if turn.calls:
            if len(turn.calls) > MAX_CALLS_PER_TURN:
                raise CallRejected(
                    f"{len(turn.calls)} tool calls in one answer; at most {MAX_CALLS_PER_TURN}"
                )
            return list(turn.calls)
        if turn.content and turn.content.lstrip().startswith("{"):
            # Some servers put the call in the content; it must still be a valid envelope.
            name, arguments = parse_envelope(turn.content)
            return [Call(id="content", name=name, arguments=arguments)]
        if force is None:
            raise _NotHonoured
        raise CallRejected(f"no tool call in the answer; call {force}")

    def _answer(
        self,
        state: ClusterState,
        decision: _Decision,
        turn: Turn,
        calls: list[Call],
        lookups: Lookups,
    ) -> Plan | None:
        """Run the look-ups, or return the submitted plan; a rejected call starts the repair."""
        results: list[str] = []
        for call in calls:
            try:
                parsed = parse_call(call.name, call.arguments)
                if isinstance(parsed, SubmitPlan):
                    check_plan(parsed, state)
                    append_turn(decision.messages, turn, [call], ["accepted"])
                    return Plan(
                        actions=parsed.actions,
                        rationale=parsed.rationale,
                        planner=self.name,
                        model=self.endpoint.model,
                    )
            except CallRejected as exc:
                self._repair(decision, turn, calls, str(exc))
                return None
            decision.lookups.append(call.name)
            results.append(lookups.answer(parsed))
        append_turn(decision.messages, turn, calls, results)
        return None

    def _repair(self, decision: _Decision, turn: Turn, calls: list[Call], error: str) -> None:
        if decision.repairs >= 1:
            raise PlannerFailed(f"invalid answer after one repair round: {error[:300]}")
        decision.repairs += 1
        note = f"REJECTED, nothing was done: {error}. Answer again with a valid call."
        append_turn(decision.messages, turn, calls, [note] * len(calls), repair=note)


class _NotHonoured(Exception):
    """The server answered without a tool call although one was required."""


PROBE_S = 10.0
"""The longest the start-up check of the endpoint waits for its one answer."""
NO_ENDPOINT = (
    "--planner llm: no endpoint is set, and Steward never picks one for you: set llm.base_url "
    "in steward.yaml or STEWARD_LLM_BASE_URL (or OPENAI_BASE_URL), e.g. "
    "http://127.0.0.1:8431/v1 for a local server (scripts/llm-server starts one) or "
    "https://api.openai.com/v1 for OpenAI with STEWARD_LLM_API_KEY"
)


def make_planner(
    policy: Policy,
    history: Callable[[], History] | None = None,
    configured: Mapping[str, object] | None = None,
) -> LLMPlanner:
    """The LLM planner configured from steward.yaml's `llm` section (`configured`: the keys
    set there, the environment already applied over them) and the STEWARD_LLM_* variables.

    Raises InvalidInput when a setting does not parse or no endpoint is set (a planner aimed at
    an endpoint nobody chose would send the cluster's state to it); an endpoint that is down is
    not an error here — the first decision finds out and the rules planner takes over.
    """
    given = {k: v for k, v in (configured or {}).items() if v is not None}
    try:
        settings = LLMSettings(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"{_variable(e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise InvalidInput(f"LLM planner settings: {problems}") from exc
    return LLMPlanner(settings, policy=policy, history=history)


def _variable(loc: tuple[int | str, ...]) -> str:
    """The environment variable a settings error is about."""
    name = ".".join(str(p) for p in loc).upper()
    return name if name.startswith(("STEWARD_", "OPENAI_")) else f"STEWARD_LLM_{name}"
