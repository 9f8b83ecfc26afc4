"""The Notifier seam: how the agent tells people what happened (provisional copy of the lead's
seam, replaced by main's at merge)."""

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
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: NoticeKind
    decision_id: str | None = None
    text: str
    at: datetime
    details: dict[str, JsonValue] = {}


class Notifier(Protocol):
    def notify(self, notice: Notice) -> None: ...


class LogNotifier:
    def notify(self, notice: Notice) -> None:
        structlog.get_logger("steward.notice").info(notice.kind, text=notice.text)
