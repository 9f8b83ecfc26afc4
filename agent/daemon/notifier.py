"""The Notifier seam: how the daemon tells people what happened, whatever the channel.

A `Notice` is one thing worth telling (a finding appeared or cleared, a decision waits for a
human, an action failed, the planner fell back, the agent was paused or resumed); a `Notifier`
takes it and must not make the loop wait. `LogNotifier`, the default, writes it to the daemon's
log; agent/chatops/notifier.py sends it to Slack through a durable outbox.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol

import structlog
from pydantic import BaseModel, ConfigDict, JsonValue

NoticeKind = Literal[
    "finding_appeared",
    "finding_cleared",
    "needs_approval",
    "action_failed",
    "planner_fallback",
    "refused_at_execution",
    "paused",
    "resumed",
]


class Notice(BaseModel):
    """One thing worth telling people; `details` carries what a channel may show besides."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: NoticeKind
    decision_id: str | None = None
    text: str
    at: datetime
    details: dict[str, JsonValue] = {}


class Notifier(Protocol):
    """Takes a notice; returns at once (a slow or failing channel never holds up a tick)."""

    def notify(self, notice: Notice) -> None: ...


class LogNotifier:
    """Notices as log lines of `steward.notice` (the default notifier)."""

    def notify(self, notice: Notice) -> None:
        structlog.get_logger("steward.notice").info(notice.kind, text=notice.text)
