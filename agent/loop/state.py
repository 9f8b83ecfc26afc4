"""The loop's state: what one decision carries from observe to record.

`Decision` is the LangGraph state of one decision (one graph thread, keyed by its id). It is kept
small on purpose: every step is checkpointed to SQLite, so the observation itself is not stored
in it — only its digest and time; a node that needs the snapshot asks the loop's context, which
re-observes after a restart. It carries what assess made of the snapshot (agent/signals/), the
plan, the guard's verdicts and what came of them. `Deliberated` is a model's answer to a
question (agent/planners/question.py) asked beside the loop, carried into the decision that
judges it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from agent.approvals.asked import AskedProposal
from agent.audit import ActionOutcome, Check, GateVerdict
from agent.capacity.forecast import Forecast, Holt, Misses
from agent.capacity.windows import Quiet, Windows
from agent.planners.question import Question
from agent.signals.memory import Memory, SloMemory, WorkloadMemory
from agent.signals.model import LinkSignal, Signals, SloView, WorkloadSignals
from policies.judgement import Verdict
from tools.actions import Plan
from tools.approval import Approval

Stage = Literal["observe", "assess", "plan", "guard", "approve", "act", "verify", "record", "done"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Deliberated(_Model):
    """A question the model deliberated beside the loop, and its answer, carried into the
    decision that judges it on a fresh observation (agent/loop/deliberation.py)."""

    deliberation_id: str
    question: Question
    asked_at: datetime
    """The observation the question was asked on."""
    plan: Plan | None = None
    """The model's plan; None when it failed (the rules' actions for the question go)."""
    fallback_reason: str | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    tools_called: tuple[str, ...] = ()
    transcript_digest: str | None = None


class SplitPart(_Model):
    """The actions of a deliberation's answer that need approval, split off from the decision
    that ran the rest at once, to wait as a decision of their own (agent/loop/approval_split.py)."""

    decision_id: str
    """The decision they become: its approval id (`steward approve ID`)."""
    split_from: str
    """The decision that ran the rest of the answer."""
    plan: Plan
    """Only the actions that wait, with the answer's planner, model and rationale."""


class Decision(BaseModel):
    """The graph state of one decision. Nodes return partial updates of it."""

    model_config = ConfigDict(extra="forbid")

    decision_id: str
    tick: int = 0
    dry_run: bool = False
    observed_at: datetime | None = None
    digest: str | None = None
    """The observation's SHA-256, taken when the decision is recorded (it costs a full dump)."""
    signals: Signals | None = None
    plan: Plan | None = None
    fallback_reason: str | None = None
    """Why the chosen planner failed and the rules planner decided instead."""
    fallback_fresh: bool = False
    """The chosen planner failed on this very decision (not merely resting after a failure)."""
    planner_ms: float | None = None
    verdicts: tuple[Verdict, ...] = ()
    """The guard's answer for each action of the plan (policies.judgement.Verdict)."""
    expected_effects: tuple[str, ...] = ()
    """What each action of the plan is expected to change, in the plan's order."""
    plan_findings: tuple[str, ...] = ()
    approval: Approval | None = None
    execution: tuple[GateVerdict, ...] = ()
    """The guard's verdicts at execution (agent/loop/gate.py): only what they allow runs."""
    outcomes: tuple[ActionOutcome, ...] = ()
    verification: tuple[Check, ...] = ()
    verified: bool | None = None
    recorded: bool = False
    stage: Stage = "observe"
    reconciled: bool = False
    """Act found this decision's intent already logged without an outcome (a crash mid-act)."""
    deliberation: Deliberated | None = None
    """A deliberation's answer this decision judges (instead of asking a planner)."""
    asked: AskedProposal | None = None
    """A proposal from a person's question this decision judges (agent/approvals/asked.py):
    every action of it waits for a person, whatever the policy would allow."""
    superseded: bool = False
    """The deliberation's premise no longer held on the fresh observation: nothing ran."""
    deliberating: bool = False
    """A model deliberates beside this loop: an anomaly alone is worth planning for (it is a
    question for the model); without one the tick ends where nothing needs deciding."""
    split_off: SplitPart | None = None
    """The part of this decision's plan that needs approval, handed on to wait as a decision
    of its own while this one acts on the rest (agent/loop/approval_split.py)."""
    split_part: SplitPart | None = None
    """The split-off part this decision judges: every action of it waits for a person."""

    @model_validator(mode="before")
    @classmethod
    def _from_earlier_versions(cls, data: Any) -> Any:
        """Checkpoints written before the loop kept the engine's own verdicts held each
        verdict without its position and with the action's expected effect inside it."""
        if not isinstance(data, dict):
            return data
        verdicts = data.get("verdicts") or ()
        if not any(isinstance(v, dict) and "expected_effect" in v for v in verdicts):
            return data
        data = dict(data)
        data["expected_effects"] = tuple(v.get("expected_effect", "") for v in verdicts)
        data["verdicts"] = tuple(
            {"rule_ids": (), "message": ""}
            | {k: x for k, x in v.items() if k != "expected_effect"}
            | {"index": i}
            for i, v in enumerate(verdicts)
        )
        return data

    def expected_effect(self, index: int) -> str:
        """What action `index` of the plan is expected to change ("" if not worked out)."""
        effects = self.expected_effects
        return effects[index] if 0 <= index < len(effects) else ""

    @property
    def allowed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.decision == "allow"]

    @property
    def waiting(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.decision == "needs_approval"]


SERIALIZED_TYPES: tuple[type[BaseModel], ...] = (
    Forecast,
    Holt,
    Misses,
    Quiet,
    Windows,
    SloView,
    SloMemory,
    WorkloadSignals,
    LinkSignal,
    Signals,
    WorkloadMemory,
    Memory,
    Verdict,
    Approval,
    Decision,
    Plan,
    ActionOutcome,
    Check,
    GateVerdict,
    Question,
    Deliberated,
    AskedProposal,
    SplitPart,
)
"""Models the checkpointer may rebuild from its msgpack records (with the Action classes)."""
