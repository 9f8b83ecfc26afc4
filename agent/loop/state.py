"""The loop's state: what one decision carries from observe to record, and what ticks remember.

`Decision` is the LangGraph state of one decision (one graph thread, keyed by its id). It is kept
small on purpose: every step is checkpointed to SQLite, so the observation itself is not stored
in it — only its digest and time; a node that needs the snapshot asks the loop's context, which
re-observes after a restart; `Signals`, what assess makes of a snapshot, is defined below the
loop and the planners (agent.signals.model), which both read it. `Memory` is the little
the loop remembers between ticks (when each pool was last busy, recent queue samples, recent
denials), so that "idle for ten minutes" and "the queue has been calm for five" are facts, not
guesses; it belongs to the loop, not to one decision, so it lives in the loop context and the
data dir (loop.json), outside the checkpoints.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue, model_validator

from agent.audit import ActionOutcome, Check, GateVerdict
from agent.capacity.forecast import Forecast, Holt, Misses
from agent.capacity.windows import Quiet, Windows
from agent.signals.model import LinkSignal, Signals, SloView, WorkloadSignals
from policies.judgement import Verdict
from tools.actions import Action, Plan
from tools.approval import Approval

Stage = Literal["observe", "assess", "plan", "guard", "approve", "act", "verify", "record", "done"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


QuestionKind = Literal["rotation", "lending", "anomaly", "marked"]

ASKS: dict[QuestionKind, str] = {
    "rotation": (
        "Demand favours another serving mode. Decide whether to rotate the node pair now "
        "(rotate_mode) or not (an empty plan): a two-node mode must win at something two "
        "separate models cannot, and the rotation's downtime must pay. Look at the modes, the "
        "demand and the preflight before you decide."
    ),
    "lending": (
        "A higher-priority pool wants cards that a lower-priority pool with demand of its own "
        "holds: their SLOs conflict. Decide which pool yields the cards (the scale actions), "
        "or that neither does (an empty plan)."
    ),
    "anomaly": (
        "An anomaly was found that no rule fixes. Decide what, if anything, to do about it "
        "(e.g. cordon a node whose accounting is wrong), or nothing (an empty plan)."
    ),
    "marked": (
        "The policy asks for these actions to be deliberated before they run. Decide whether "
        "to run them, others, or nothing (an empty plan)."
    ),
}


class Question(_Model):
    """One thing to deliberate: its premise (`key`), the facts asked about, and what the rules
    would do about it (the fallback when the model cannot answer)."""

    kind: QuestionKind
    key: str
    facts: dict[str, JsonValue] = {}
    """What the question is about, from the observation (untrusted text: fenced when sent)."""
    rules_actions: tuple[Action, ...] = ()

    @property
    def ask(self) -> str:
        """The instruction (Steward's own words, never cluster text)."""
        return ASKS[self.kind]

    def line(self) -> str:
        return f"{self.kind} ({self.key})"


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


class SloMemory(_Model):
    """What the capacity model remembers of one workload between ticks."""

    read_at: float | None = None
    """POSIX time of the last reading folded in (a scrape is counted once)."""
    holt: Holt | None = None
    misses: Misses = Misses()
    """The forecast's record one horizon ahead (agent.capacity.forecast.widened)."""
    windows: Windows | None = None
    quiet: Quiet = Quiet()
    needs: tuple[tuple[float, int], ...] = ()
    """(POSIX time, replicas the sizing asked for), oldest first, over the keep time."""
    correction: float = 1.0
    drift_told: bool = False
    """A drift was reported and has not ended since (told once)."""
    waiting: int = 0
    """Readings in a row that found requests waiting."""


class WorkloadMemory(_Model):
    calm_since: datetime | None = None
    """Since when the queue wait has been below the scale-down watermark (None: not calm)."""
    samples: tuple[tuple[float, float], ...] = ()
    """Recent (POSIX time, queue depth) readings, oldest first, bounded."""
    slo: SloMemory | None = None


class Memory(_Model):
    """What the loop remembers between ticks; persisted in the data dir after each tick."""

    workloads: dict[str, WorkloadMemory] = {}
    last_busy: dict[str, datetime] = {}
    """Per pool: the last observation that found it busy (or could not tell it was idle)."""
    watching_since: datetime | None = None
    """When the loop first observed; a pool never seen busy has been idle since then."""
    mode_favoured_since: datetime | None = None
    mode_favoured: str | None = None
    mode_seen_at: datetime | None = None
    """The last observation that found demand favouring `mode_favoured`."""
    mode_because: str = ""
    denied: dict[str, datetime] = {}
    """Actions the guard denied lately (keyed by their JSON without the reason), and until when
    each is held back (agent.loop.holds.hold_until)."""


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
    superseded: bool = False
    deliberating: bool = False
    """A model deliberates beside this loop: an anomaly alone is worth planning for (it is a
    question for the model); without one the tick ends where nothing needs deciding."""
    """The deliberation's premise no longer held on the fresh observation: nothing ran."""

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
)
"""Models the checkpointer may rebuild from its msgpack records (with the Action classes)."""

MEMORY_SAMPLES = 12
"""How many queue-depth samples per workload the memory keeps for the demand trend."""
