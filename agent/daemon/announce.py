"""What each tick tells people: the notices the daemon sends through its Notifier.

After every decision the runtime hands the tick's report and decision here, and the announcer
says what changed since the tick before — a finding that appeared or cleared, a decision that
now waits for a human, an action that failed, a planner that failed over to the rules, the agent
paused or resumed (from any process: the pause switch is read every tick). A finding's identity
is its sentence with the figures taken out, so "queue 12" and "queue 13" are one finding, not
a new one each tick. Flapping is left to the notifier's digest (agent/chatops/courier.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from agent.daemon.notifier import Notice, NoticeKind, Notifier
from agent.daemon.pause import Pause
from agent.loop.state import Decision

_FIGURES = re.compile(r"\d+(\.\d+)?")


def finding_key(text: str) -> str:
    """A finding without its figures: what stays the same while the numbers move."""
    return _FIGURES.sub("#", text)


class Announcer:
    """Remembers what the last tick showed; `tick` notifies what is new."""

    def __init__(self, notifier: Callable[[], Notifier]) -> None:
        self._notifier = notifier
        self._findings: dict[str, str] = {}
        self._paused: Pause | None = None
        self._started = False

    def tick(
        self,
        findings: tuple[str, ...],
        decision: Decision,
        *,
        waiting: bool,
        paused: Pause | None,
        at: datetime,
    ) -> None:
        said: list[Notice] = []

        def say(kind: NoticeKind, text: str, decision_id: str | None = None) -> None:
            said.append(Notice(kind=kind, decision_id=decision_id, text=text, at=at))

        if paused != self._paused and (self._started or paused is not None):
            if paused is not None:
                say("paused", f"the agent is {paused.line()}; it executes nothing until resumed")
            else:
                say("resumed", "the agent was resumed; actions run again")
        self._paused, self._started = paused, True
        now = {finding_key(f): f for f in findings}
        for key, text in now.items():
            if key not in self._findings:
                say("finding_appeared", text, decision.decision_id)
        for key, text in self._findings.items():
            if key not in now:
                say("finding_cleared", text)
        self._findings = now
        if waiting:
            asked = [
                v.action.describe() for v in decision.verdicts if v.decision == "needs_approval"
            ]
            say("needs_approval", "; ".join(asked) or "a decision waits", decision.decision_id)
        for o in decision.outcomes:
            if o.executed and not o.ok:
                what = decision.verdicts[o.index].action.describe()
                say("action_failed", f"{what}: {o.message}", decision.decision_id)
        if decision.fallback_fresh and decision.fallback_reason:
            say("planner_fallback", decision.fallback_reason, decision.decision_id)
        notifier = self._notifier()
        for notice in said:
            notifier.notify(notice)
