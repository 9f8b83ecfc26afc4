"""What the daemon itself tells people each tick: that the agent was paused or resumed.

The pause switch can be flipped from any process (`steward pause`, a Slack command), so the
runtime reads it every tick and the announcer says when it changed. Everything a decision has
to say — findings appearing and clearing, a decision waiting for a human, an action failed or
refused at execution, a planner fallback — the loop says itself, as it happens
(agent/loop/nodes.py, agent/loop/findings.py), through the same Notifier.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from agent.support.notices import Notice, NoticeKind, Notifier
from agent.support.pause import Pause


class Announcer:
    """Remembers what the last tick showed; `tick` notifies what is new."""

    def __init__(self, notifier: Callable[[], Notifier]) -> None:
        self._notifier = notifier
        self._paused: Pause | None = None
        self._started = False

    def tick(self, *, paused: Pause | None, at: datetime) -> None:
        said: list[Notice] = []

        def say(kind: NoticeKind, text: str, decision_id: str | None = None) -> None:
            said.append(Notice(kind=kind, decision_id=decision_id, text=text, at=at))

        if paused != self._paused and (self._started or paused is not None):
            if paused is not None:
                say("paused", f"the agent is {paused.line()}; it executes nothing until resumed")
            else:
                say("resumed", "the agent was resumed; actions run again")
        self._paused, self._started = paused, True
        notifier = self._notifier()
        for notice in said:
            notifier.notify(notice)
