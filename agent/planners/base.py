"""The `Planner` protocol shared by the rules planner and the LLM planner, and what a decision cost.

`PlannerReport` is how a planner that talks to a model says what one decision cost and how it
went. A planner that keeps one sets `last_report` after every `plan()` call — when it returns and
when it raises `PlannerFailed` — so the loop can log it and count it in /metrics:

    plan = planner.plan(state, signals)          # or: except PlannerFailed
    report = getattr(planner, "last_report", None)
    if isinstance(report, PlannerReport): ...    # tokens, latency, model, endpoint, failure
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agent.signals.model import Signals
from policies.history import History
from tools.actions import Plan
from tools.model import ClusterState

if TYPE_CHECKING:
    from agent.audit import AuditLog
    from agent.planners.question import Question


class Planner(Protocol):
    name: str

    def plan(self, state: ClusterState, signals: Signals) -> Plan:
        """Propose actions for this observation; never executes anything."""
        ...


class PlannerReport(BaseModel):
    """One decision of a model-backed planner: its cost, its course and, if it failed, why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    planner: str
    model: str | None = None
    endpoint: str | None = None
    """The base URL asked (never a key)."""
    output_mode: str | None = None
    """How the model answered: `tools`, `json_schema` or `json_object` (after any downgrade)."""
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    latency_s: float = Field(default=0.0, ge=0)
    """Wall time of the whole decision, every request and retry included."""
    requests: int = Field(default=0, ge=0)
    """HTTP requests sent, retries included."""
    lookups: tuple[str, ...] = ()
    """Read-only tools the model called, in order."""
    repairs: int = Field(default=0, ge=0)
    """Answers sent back once with their validation error."""
    failure: str | None = None
    """Set when the planner raised PlannerFailed: the same reason, for the log."""


class ReportingPlanner(Planner, Protocol):
    """A planner that keeps a `PlannerReport` of its last decision."""

    last_report: PlannerReport | None


@runtime_checkable
class ReadsHistory(Protocol):
    """A planner that can look up what was done lately (the LLM planner's `history`): the
    daemon gives it the loop's own when it has none."""

    history: Callable[[], History] | None


@runtime_checkable
class ReadsDecisionLog(Protocol):
    """A planner whose look-ups search and explain the decision log (the LLM planner's
    `search_audit` and `explain_decision`): the daemon gives it its own log when it has none."""

    audit: Callable[[], AuditLog] | None


@runtime_checkable
class Deliberator(Protocol):
    """A planner that can answer a judgment question beside the loop (the LLM planner): it
    keeps the report and the transcript of its last deliberation."""

    name: str
    last_report: PlannerReport | None
    last_transcript: list[dict[str, Any]]

    @property
    def model(self) -> str | None: ...

    def deliberate(self, state: ClusterState, signals: Signals, question: Question) -> Plan: ...
