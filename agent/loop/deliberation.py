"""Deliberations: the model answers judgment questions beside the loop, never inside a tick.

A tick that finds a question (agent/loop/questions.py) hands it here with the tick's
observation and goes on; the question is deliberated in a worker thread, one at a time, under
the model's own deadline (STEWARD_LLM_DEADLINE_S). Each later tick asks `finished()` for the
answers that came: the runtime runs each as a decision of its own, judged by the guard on a
fresh observation (agent/loop/nodes.py: superseded when its premise is gone). A model that
fails — an error, a hang, an answer past the deadline — is a fallback: the rules' actions for
the question go to the guard instead, and the log says so. A worker that outlives its deadline
(and a grace) is abandoned: its question ends as a fallback at the deadline, and whatever the
worker returns later is dropped.

With `wait=True` (a simulated clock run flat out: evals, tests) a question is deliberated before
`ask` returns: the simulated world does not move meanwhile, so the run stays reproducible; the
answer is still judged on the next tick's observation.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

import structlog

from agent.audit import new_decision_id, transcripts
from agent.loop.state import Deliberated
from agent.planners.base import Deliberator
from agent.planners.errors import PlannerFailed
from agent.planners.question import Question
from agent.signals.model import Signals
from tools.model import ClusterState

log = structlog.get_logger("steward.deliberation")

GRACE_S = 5.0
"""Past its deadline, how long a worker may still take before its question is given up."""


@dataclass
class _Running:
    deliberation_id: str
    question: Question
    asked_at_s: float
    state: ClusterState
    thread: threading.Thread | None = None
    answer: Deliberated | None = None
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(eq=False)
class Deliberations:
    """The questions in deliberation and the answers not yet judged (module docstring)."""

    model: Deliberator
    data_dir: Path
    _: KW_ONLY
    deadline_s: float
    wait: bool = False
    clock: Callable[[], float] = time.monotonic
    settled: dict[str, str] = field(default_factory=dict, init=False)
    """Premises answered (key -> deliberation id): not asked again while they stand."""
    _running: list[_Running] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def busy(self) -> bool:
        with self._lock:
            return any(not r.done.is_set() for r in self._running)

    def pending(self) -> set[str]:
        """The premises asked and not yet judged."""
        with self._lock:
            return {r.question.key for r in self._running}

    def forget_gone(self, keys: set[str]) -> None:
        """Premises no longer seen may be asked again when they come back."""
        for key in [k for k in self.settled if k not in keys]:
            del self.settled[key]

    def ask(self, question: Question, state: ClusterState, signals: Signals) -> str | None:
        """Start deliberating `question` unless it is pending or settled, or the model is busy
        with another (one at a time); returns the new deliberation's id."""
        if question.key in self.settled or question.key in self.pending() or self.busy:
            return None
        running = _Running(new_decision_id(), question, self.clock(), state)
        with self._lock:
            self._running.append(running)
        log.info(
            "deliberating",
            deliberation=running.deliberation_id,
            question=question.line(),
            deadline_s=self.deadline_s,
        )
        if self.wait:
            self._work(running, signals)
            return running.deliberation_id
        running.thread = threading.Thread(
            target=self._work,
            args=(running, signals),
            name=f"deliberation-{running.deliberation_id}",
            daemon=True,
        )
        running.thread.start()
        return running.deliberation_id

    def finished(self) -> list[Deliberated]:
        """The answers that came, and the questions given up at their deadline."""
        now = self.clock()
        out: list[Deliberated] = []
        with self._lock:
            for r in list(self._running):
                if r.done.is_set() and r.answer is not None:
                    out.append(r.answer)
                elif now - r.asked_at_s > self.deadline_s + GRACE_S:
                    out.append(self._given_up(r, now))
                else:
                    continue
                self._running.remove(r)
                self.settled[r.question.key] = r.deliberation_id
        return out

    def _given_up(self, r: _Running, now: float) -> Deliberated:
        reason = (
            f"no answer within the deliberation's deadline of {self.deadline_s:g} s "
            f"({now - r.asked_at_s:.0f} s); the rules decide"
        )
        log.warning("deliberation given up", deliberation=r.deliberation_id, reason=reason)
        r.done.set()  # whatever the worker returns later is dropped
        return Deliberated(
            deliberation_id=r.deliberation_id,
            question=r.question,
            asked_at=r.state.observed_at,
            fallback_reason=reason,
            model=self.model.model,
            latency_s=round(now - r.asked_at_s, 3),
        )

    def _work(self, r: _Running, signals: Signals) -> None:
        answer = _answer(
            self.model,
            r.deliberation_id,
            r.question,
            r.state,
            signals,
            started_s=r.asked_at_s,
            clock=self.clock,
        )
        try:
            if self.model.last_transcript:
                digest = transcripts.store(self.data_dir, self.model.last_transcript)
                answer = answer.model_copy(update={"transcript_digest": digest})
        except OSError as exc:
            log.warning("transcript not stored", error=str(exc))
        with self._lock:
            if r.done.is_set():
                return  # given up at its deadline already
            r.answer = answer
            r.done.set()
        log.info(
            "deliberated",
            deliberation=r.deliberation_id,
            failed=answer.fallback_reason,
            actions=[a.describe() for a in answer.plan.actions] if answer.plan else None,
        )


def _answer(
    model: Deliberator,
    deliberation_id: str,
    question: Question,
    state: ClusterState,
    signals: Signals,
    *,
    started_s: float,
    clock: Callable[[], float],
) -> Deliberated:
    """`model`'s answer to `question`, asked in this thread: its plan, or why it gave none (the
    rules' actions for the question then go), and what it cost. Whatever the model does, the
    question ends so: a worker never dies silently, a dry run goes on with the rules."""
    plan, failure = None, None
    try:
        plan = model.deliberate(state, signals, question)
    except PlannerFailed as exc:
        failure = exc.reason
    except Exception as exc:
        failure = f"unexpected {type(exc).__name__}: {str(exc)[:200]}"
    report = model.last_report
    return Deliberated(
        deliberation_id=deliberation_id,
        question=question,
        asked_at=state.observed_at,
        plan=plan,
        fallback_reason=failure,
        model=model.model,
        prompt_tokens=report.prompt_tokens if report else 0,
        completion_tokens=report.completion_tokens if report else 0,
        latency_s=report.latency_s if report else round(clock() - started_s, 3),
        tools_called=report.lookups if report else (),
    )


def deliberate_now(
    model: Deliberator, question: Question, state: ClusterState, signals: Signals
) -> Deliberated:
    """Deliberate `question` in this thread, under the model's own deadline, for a dry run
    (`steward plan`): nothing waits on it but the command that asked, and nothing is stored
    (no transcript). A model that fails gives a fallback: the rules' actions for the question."""
    started = time.monotonic()
    answer = _answer(
        model, new_decision_id(), question, state, signals, started_s=started, clock=time.monotonic
    )
    log.info(
        "deliberated (dry run)",
        question=question.line(),
        failed=answer.fallback_reason,
        actions=[a.describe() for a in answer.plan.actions] if answer.plan else None,
    )
    return answer
