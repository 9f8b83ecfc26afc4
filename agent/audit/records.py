"""The decision log's record schema: what one entry says, and the bytes its hash is taken over.

A record is an envelope (schema version, seq, time, kind, decision id, the previous record's
hash) around one typed payload. The payload kinds form a closed set — one pydantic model per
kind — so that every reader (verify, show, explain, export, the policy history) sees the same
shape the writer wrote. The hash is SHA-256 over the canonical JSON of the envelope and payload
(sorted keys, no spaces, UTF-8); the optional MAC is HMAC-SHA256 of that hash under
STEWARD_AUDIT_KEY, so that whoever can write the file still cannot re-forge the chain.

Bump SCHEMA_VERSION when a payload changes incompatibly; readers refuse versions they do not know.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, model_validator

from policies.judgement import Decision
from policies.judgement import Verdict as PolicyVerdict
from tools.actions import Action, Plan
from tools.approval import Approval, Channel
from tools.backends.base import ActionResult
from tools.results import Check

SCHEMA_VERSION = 1
GENESIS_HASH = "0" * 64
"""The `prev_hash` of the first record."""

Kind = Literal[
    "startup",
    "intent",
    "approval",
    "execution",
    "outcome",
    "plan",
    "fallback",
    "interrupted",
    "mode_step",
    "finding",
    "deliberation",
]
KINDS: tuple[Kind, ...] = get_args(Kind)

DecisionId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")]
Digest = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


def new_decision_id() -> str:
    """A fresh decision id, e.g. `d-1f3a9c0b7e21`."""
    return f"d-{uuid.uuid4().hex[:12]}"


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Proposal(_Payload):
    """One proposed action and the policy's verdict on it."""

    action: Action
    verdict: Decision
    rule_ids: tuple[str, ...] = ()
    message: str = ""
    approvers: tuple[str, ...] = ()
    """For an action that needs approval: the approver groups whose members may give it."""


def proposals(plan: Plan, verdicts: Sequence[PolicyVerdict]) -> tuple[Proposal, ...]:
    """Pair each action of `plan` with its verdict (one verdict per action, in order)."""
    if len(verdicts) != len(plan.actions):
        raise ValueError(
            f"the plan has {len(plan.actions)} action(s) but {len(verdicts)} verdict(s) were "
            "given; judge the whole plan and pass Judgement.verdicts"
        )
    # The plan's actions and the engine's verdicts are validated models already: a proposal
    # made of their fields needs no validating again (200 of them in a fleet's calm spell).
    return tuple(
        Proposal.model_construct(
            action=action,
            verdict=v.decision,
            rule_ids=tuple(v.rule_ids),
            message=v.message,
            approvers=tuple(v.approvers),
        )
        for action, v in zip(plan.actions, verdicts, strict=True)
    )


class _Decision(_Payload):
    """What a decision saw and proposed; shared by real intents and dry-run plans."""

    decision_id: DecisionId = Field(default_factory=new_decision_id)
    observed_at: datetime
    observation_digest: Digest
    """ClusterState.digest() of the observation the plan was made from."""
    signals: dict[str, JsonValue] = {}
    planner: str
    model: str | None = None
    rationale: str = ""
    proposals: tuple[Proposal, ...] = ()
    findings: tuple[str, ...] = ()
    """Plan-level findings of the policy engine (budget exceeded, quiet hours …)."""
    approvals_pending: tuple[int, ...] = ()
    """Indexes into `proposals` that wait for a human; filled from the verdicts when omitted."""

    @model_validator(mode="before")
    @classmethod
    def _pending_from_verdicts(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "approvals_pending" in data:
            return data
        given = data.get("proposals", ())
        if not isinstance(given, list | tuple):
            return data  # the field's own validation names the problem
        verdicts = [
            p.get("verdict") if isinstance(p, dict) else getattr(p, "verdict", None) for p in given
        ]
        pending = tuple(i for i, v in enumerate(verdicts) if v == "needs_approval")
        return {**data, "approvals_pending": pending}

    @model_validator(mode="after")
    def _pending_points_at_proposals(self) -> _Decision:
        for i in self.approvals_pending:
            if not 0 <= i < len(self.proposals):
                raise ValueError(
                    f"approvals_pending holds {i}, but there are {len(self.proposals)} proposals"
                )
        return self


class Intent(_Decision):
    """Written, durable, before any action of the decision runs."""

    kind: Literal["intent"] = "intent"


class DryRunPlan(_Decision):
    """What `steward plan` would do; nothing was executed."""

    kind: Literal["plan"] = "plan"
    dry_run: Literal[True] = True


class ApprovalRecord(_Payload):
    """A person's answer to one proposal that needed approval, as the log keeps it: the answer
    (tools.approval.Approval) and the decision and action it answers."""

    kind: Literal["approval"] = "approval"
    decision_id: DecisionId
    action_index: int = Field(ge=0)
    approved: bool
    principal: str = Field(min_length=1)
    """Who answered, as the policy's approver groups name them."""
    channel: Channel
    sender: str = ""
    """Who the channel vouches sent the answer: the OS user on cli, the user id on slack."""
    decided_at: datetime
    note: str = ""

    @classmethod
    def of(cls, decision_id: str, action_index: int, approval: Approval) -> ApprovalRecord:
        """The record of `approval` given to action `action_index` of `decision_id`."""
        return cls(
            decision_id=decision_id,
            action_index=action_index,
            approved=approval.approved,
            principal=approval.principal,
            channel=approval.channel,
            sender=approval.sender or approval.principal,
            decided_at=approval.at,
            note=approval.reason,
        )

    def approval(self) -> Approval:
        """The answer itself, as every other layer holds it."""
        return Approval(
            answer="approved" if self.approved else "denied",
            principal=self.principal,
            at=self.decided_at,
            channel=self.channel,
            sender=self.sender,
            reason=self.note,
        )


class GateVerdict(_Payload):
    """One proposal's verdict at execution: allow runs it, deny does not."""

    index: int = Field(ge=0)
    verdict: Literal["allow", "deny"]
    rule_ids: tuple[str, ...] = ()
    message: str = ""
    refused_at_execution: bool = False
    """Allowed or approved before, refused now: the fresh observation, the policy in force or
    the clock (an expired approval) said no."""


class Execution(_Payload):
    """The guard's verdicts at execution, judged again on a fresh observation just before the
    backend is called; written (durable) before any action of the decision runs, and only an
    action allowed here runs."""

    kind: Literal["execution"] = "execution"
    decision_id: DecisionId
    observed_at: datetime
    observation_digest: Digest
    verdicts: tuple[GateVerdict, ...]


FindingKind = Literal[
    "shared_card",
    "degraded_link",
    "gid_changed",
    "stale_metrics",
    "unschedulable",
    "context_below_fit",
    "cordoned_capacity",
]


class FindingChange(_Payload):
    """A finding appeared in the observations, or cleared: one record each way, not per tick."""

    kind: Literal["finding"] = "finding"
    finding: FindingKind
    observed_at: datetime
    """The observation that showed the change."""
    key: str = Field(min_length=1)
    """What the finding is about, stable across ticks (e.g. `degraded_link:gx10-link/rail0`)."""
    status: Literal["appeared", "cleared"]
    text: str = ""


class ActionOutcome(_Payload):
    """What became of one proposal: run or not, and what the backend said."""

    index: int = Field(ge=0)
    """Index into the intent's proposals."""
    executed: bool
    ok: bool
    dry_run: bool = False
    changed: bool = False
    message: str = ""
    detail: dict[str, JsonValue] = {}

    @classmethod
    def from_result(cls, index: int, result: ActionResult) -> ActionOutcome:
        """The outcome of an action the backend carried out (or dry-ran)."""
        extra = result.model_dump(mode="json", exclude={"ok", "dry_run", "message", "changed"})
        return cls(
            index=index,
            executed=not result.dry_run,
            ok=result.ok,
            dry_run=result.dry_run,
            changed=result.changed,
            message=result.message,
            detail=extra,
        )

    @classmethod
    def skipped(cls, index: int, why: str) -> ActionOutcome:
        """An action that was not run (denied, not approved, an earlier step failed)."""
        return cls(index=index, executed=False, ok=False, message=why)


class Outcome(_Payload):
    """Written after the decision's actions ran (or were skipped): results and verification."""

    kind: Literal["outcome"] = "outcome"
    decision_id: DecisionId
    results: tuple[ActionOutcome, ...] = ()
    verification: tuple[Check, ...] = ()
    error: str | None = None
    """Why the decision stopped early, if it did."""

    @property
    def succeeded(self) -> bool:
        return (
            self.error is None
            and all(r.ok for r in self.results if r.executed)
            and all(c.ok for c in self.verification)
        )


class Fallback(_Payload):
    """The LLM planner failed and the rules planner decided instead."""

    kind: Literal["fallback"] = "fallback"
    decision_id: DecisionId | None = None
    from_planner: str
    to_planner: str = "rules"
    model: str | None = None
    reason: str = Field(min_length=1)


class DeliberationRecord(_Payload):
    """A question deliberated by the model beside the loop, and what became of its answer:
    `planned` (the model's plan went to the guard on a fresh observation), `fallback` (the model
    failed or missed its deadline: the rules' actions went instead) or `superseded` (the world
    changed meanwhile: the premise no longer held, nothing ran). The transcript is stored once
    beside the log (agent/audit/transcripts.py), named by `transcript_digest`."""

    kind: Literal["deliberation"] = "deliberation"
    decision_id: DecisionId
    question: str = Field(min_length=1)
    """The question's kind, e.g. rotation."""
    premise: str = Field(min_length=1)
    """The question's key: the situation asked about."""
    asked_at: datetime
    """The observation the question was asked on."""
    judged_at: datetime | None = None
    """The fresh observation the answer was judged on."""
    outcome: Literal["planned", "fallback", "superseded"]
    planner: str = "llm"
    model: str | None = None
    reason: str = ""
    actions: tuple[Action, ...] = ()
    """What the model proposed (or the rules, on a fallback)."""
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    latency_s: float = Field(default=0.0, ge=0)
    tools_called: tuple[str, ...] = ()
    transcript_digest: Digest | None = None


class Interrupted(_Payload):
    """An intent that never got its outcome (the process died in between); found at start."""

    kind: Literal["interrupted"] = "interrupted"
    decision_id: DecisionId
    intent_seq: int = Field(ge=1)
    reason: str


class ModeStep(_Payload):
    """One step of a mode rotation's journal (drain, switch, probe, commit, roll back)."""

    kind: Literal["mode_step"] = "mode_step"
    rotation_id: str = Field(min_length=1)
    step: str = Field(min_length=1)
    status: str = Field(min_length=1)
    target_mode: str | None = None
    decision_id: DecisionId | None = None
    detail: dict[str, JsonValue] = {}


class Startup(_Payload):
    """The agent started (and, as leader, took the log's pen)."""

    kind: Literal["startup"] = "startup"
    pid: int
    host: str
    version: str
    note: str = ""
    clock: Literal["wall", "simulated"] | None = None
    """Whose time the records from here on carry: the wall clock (a real cluster) or the
    simulated cluster's (None in logs written before this was recorded)."""


Payload = Annotated[
    Intent
    | DryRunPlan
    | ApprovalRecord
    | Execution
    | Outcome
    | Fallback
    | Interrupted
    | ModeStep
    | Startup
    | FindingChange
    | DeliberationRecord,
    Field(discriminator="kind"),
]
PAYLOAD_ADAPTER: TypeAdapter[Payload] = TypeAdapter(Payload)


class Record(BaseModel):
    """One entry of the log as stored: envelope, payload, chain hash and optional MAC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int
    seq: int = Field(ge=1)
    time: datetime
    kind: Kind
    decision_id: str | None
    prev_hash: str
    hash: str
    mac: str | None = None
    payload: Payload


def decision_of(payload: Payload) -> str | None:
    # Not getattr(..., None): on a payload without the field pydantic raises inside, and a
    # tick that records a hundred findings asked twice per record.
    if "decision_id" not in type(payload).model_fields:
        return None
    found: str | None = getattr(payload, "decision_id")  # noqa: B009 - typed per payload class
    return found
