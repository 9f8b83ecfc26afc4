"""Notices for people: what the agent tells someone, and the `Notifier` seam that carries it.

The loop calls a `Notifier` when something deserves a human's eye rather than a line in a log
nobody reads: a finding appeared or cleared, a decision waits for approval, an action failed or
was refused at execution, the chosen planner failed and the rules decided, the agent paused or
resumed. `Notice` is the one shape every channel receives (the Slack notifier of
agent/chatops/ renders the same model); `LogNotifier`, the default, writes it as a structlog
line. A notifier must not raise into the loop: a chat outage never stops a decision, so the
loop wraps every call (`notify_safely`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import structlog
from pydantic import BaseModel, ConfigDict, JsonValue

from tools.errors import InvalidInput

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

log = structlog.get_logger("steward.notice")


class Notice(BaseModel):
    """One thing to tell people: what kind, about which decision, in a sentence, and when."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: NoticeKind
    decision_id: str | None = None
    text: str
    at: datetime
    """On the cluster's clock (the simulated one on the simulator)."""
    details: dict[str, JsonValue] = {}


@runtime_checkable
class Notifier(Protocol):
    """Delivers notices somewhere people look."""

    def notify(self, notice: Notice) -> None: ...


class LogNotifier:
    """Notices as structlog lines on the `steward.notice` logger (warning for trouble)."""

    TROUBLE: frozenset[NoticeKind] = frozenset(
        {"action_failed", "refused_at_execution", "planner_fallback"}
    )
    """What the agent tried and could not do, and a planner that failed; a finding is news."""

    LOGGED: frozenset[NoticeKind] = frozenset({"finding_appeared", "finding_cleared"})
    """Already one line of the loop's log (`finding appeared`, agent/loop/findings.py): a
    second line for the same event would only repeat it."""

    def notify(self, notice: Notice) -> None:
        if notice.kind in self.LOGGED:
            return
        emit = log.warning if notice.kind in self.TROUBLE else log.info
        emit(
            notice.kind,
            decision=notice.decision_id,
            text=notice.text,
            at=notice.at.isoformat(),
            details=notice.details,
        )


def notify_safely(notifier: Notifier, notice: Notice) -> None:
    """Deliver a notice; a notifier that fails is logged, never raised into the loop."""
    try:
        notifier.notify(notice)
    except Exception as exc:  # a broken channel must not stop a decision
        log.error(
            "notifier failed", notifier=type(notifier).__name__, error=str(exc), notice=notice.kind
        )


class FanOut:
    """Several notifiers as one: each notice goes to every one (a failing one skipped)."""

    def __init__(self, *notifiers: Notifier) -> None:
        self.notifiers = notifiers

    def notify(self, notice: Notice) -> None:
        for notifier in self.notifiers:
            notify_safely(notifier, notice)


def notifier_for(
    names: Sequence[str], makers: Mapping[str, Callable[[], Notifier]] | None = None
) -> Notifier:
    """The notifiers steward.yaml's `notifiers` names, as one. `makers` adds channels beyond
    the log (Slack's, from agent/chatops/); a name nobody provides is bad input."""
    known: dict[str, Callable[[], Notifier]] = {"log": LogNotifier, **(makers or {})}
    missing = [name for name in names if name not in known]
    if missing:
        raise InvalidInput(
            f"notifiers: {', '.join(missing)} is not available in this steward (available: "
            f"{', '.join(sorted(known))}); fix `notifiers` in steward.yaml"
        )
    chosen = [known[name]() for name in dict.fromkeys(names)]
    return chosen[0] if len(chosen) == 1 else FanOut(*chosen)  # none: a FanOut of nothing
