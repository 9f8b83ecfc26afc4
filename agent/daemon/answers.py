"""Answering a waiting decision, for every channel alike: what an answer may say, and when.

`submit` is what `steward approve` / `deny` (and the Slack channel) call with an `Identity`:
it refuses an answer to an unknown or already answered decision (bad input), says when the
request has expired or its decision was lost (nothing will run), checks the principal may
approve every waiting action, records the answer, and — for a yes — judges the actions as the
gate at execution will (agent/loop/gate.py) on the observation at hand, so that a yes to
something the policy now refuses (a freeze began) is told so at once instead of "approved".
The agent records every refusal in the decision log when it resumes the decision.

`expire_due` is the agent's side of expiry: each tick it closes requests nobody answered
within `approval.expires_after`, and `resume_answer` turns an inbox entry into the answer the
decision's graph resumes with. Times are on the cluster's clock (the simulated one on the
simulator), the clock the decision waited on.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.approvals.asked import answerers, may_answer
from agent.approvals.channel import Identity
from agent.approvals.inbox import Inbox, PendingDecision
from agent.audit import AuditError, AuditLog
from agent.loop.gate import at_execution
from policies.durations import format_duration
from policies.history import History
from policies.judgement import Verdict
from policies.model import Policy
from tools.approval import Approval
from tools.errors import InvalidInput
from tools.model import ClusterState

Status = Literal["answered", "not_allowed", "expired", "lost", "will_be_refused"]
"""answered: recorded, the agent carries it out; the others: nothing will run (not_allowed and
expired record nothing; will_be_refused records the answer, which the agent then refuses)."""


class Submitted(BaseModel):
    """What became of an answer, in a sentence a channel can show as it is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    status: Status
    message: str
    rule_ids: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "answered"


def expires_at(pending: PendingDecision, policy: Policy) -> datetime:
    return pending.created_at + policy.approval.expires_after


def submit(
    inbox: Inbox,
    policy: Policy,
    state: ClusterState,
    history: History,
    decision_id: str,
    *,
    approved: bool,
    identity: Identity,
    reason: str = "",
    at: datetime | None = None,
) -> Submitted:
    """Answer `decision_id` as `identity`, at the time of `state` (a fresh observation), or at
    `at`: the cluster's own clock, where the daemon answers and `state` may be a saved one that
    lags it (the simulator's, saved once a second, is minutes of its time behind at speed)."""
    found = inbox.get(decision_id)
    now = state.observed_at if at is None else at
    if found is None or found.status != "waiting":
        if found is not None and found.status in ("expired", "lost"):
            return _closed(found, policy)
        # Raises the error that names what is wrong: unknown, or already answered.
        inbox.answer(decision_id, approved=approved, by=identity.principal, reason=reason, at=now)
        raise AssertionError("Inbox.answer accepts only a waiting decision")
    if now >= expires_at(found, policy):
        return Submitted(
            decision_id=decision_id,
            status="expired",
            message=f"decision {decision_id} expired at {_local(policy, expires_at(found, policy))}"
            f" (approval.expires_after {format_duration(policy.approval.expires_after)}): "
            "nothing of it will run, and the agent records it as refused (approval.expired); "
            "it proposes again if the need is still there",
            rule_ids=("approval.expired",),
        )
    # Approving and denying alike are for the approver groups to do.
    refused = [a for a in found.actions if not may_answer(policy, identity.principal, a, state)]
    if refused:
        groups = sorted({g for a in refused for g in answerers(policy, a, state)})
        return Submitted(
            decision_id=decision_id,
            status="not_allowed",
            message=f"{identity.principal} may not answer decision {decision_id}: "
            f"{'; '.join(a.describe() for a in refused)} needs a member of "
            f"{', '.join(groups) or 'an approver group'} (policy approvers); "
            "pass --as NAME of an approver",
        )
    inbox.answer(
        decision_id,
        approved=approved,
        by=identity.principal,
        reason=reason,
        at=now,
        channel=identity.channel,
        sender=identity.sender,
    )
    verb = "approved" if approved else "denied"
    done = f"{decision_id} {verb} by {identity.principal} via {identity.channel}"
    if approved:
        blocked = _refused_now(found, identity, state, policy, history)
        if blocked:
            rules = tuple(dict.fromkeys(r for _, ids, _ in blocked for r in ids))
            why = "; ".join(f"{what}: {', '.join(ids)} — {msg}" for what, ids, msg in blocked)
            return Submitted(
                decision_id=decision_id,
                status="will_be_refused",
                message=f"{done}, but the policy no longer allows it: {why}. The agent "
                "refuses it at execution and records why; nothing of it will run",
                rule_ids=rules,
            )
    return Submitted(
        decision_id=decision_id,
        status="answered",
        message=f"{done}; the running agent resumes it on its next tick (or the next "
        "`steward run`), judging it again first",
    )


def _refused_now(
    found: PendingDecision,
    identity: Identity,
    state: ClusterState,
    policy: Policy,
    history: History,
) -> list[tuple[str, tuple[str, ...], str]]:
    """What the gate would refuse if the agent acted now: (action, rule ids, message)."""
    verdicts = [
        Verdict(index=i, action=a, decision="needs_approval", rule_ids=(), message="")
        for i, a in enumerate(found.actions)
    ]
    answer = Approval(
        answer="approved",
        principal=identity.principal,
        at=state.observed_at,
        channel=identity.channel,
        sender=identity.sender,
    )
    gate = at_execution(
        verdicts,
        answer,
        decided_at=found.created_at,
        state=state,
        policy=policy,
        history=history,
        advice=False,  # whether a rotation still pays is the agent's to judge when it acts
    )
    return [
        (found.actions[g.index].describe(), g.rule_ids, g.message)
        for g in gate
        if g.verdict == "deny"
    ]


def _closed(found: PendingDecision, policy: Policy) -> Submitted:
    if found.status == "expired":
        return Submitted(
            decision_id=found.decision_id,
            status="expired",
            message=f"decision {found.decision_id} expired at "
            f"{_local(policy, expires_at(found, policy))} unanswered and was refused "
            "(approval.expired): nothing of it runs; the agent proposes again if the need is "
            "still there",
            rule_ids=("approval.expired",),
        )
    return Submitted(
        decision_id=found.decision_id,
        status="lost",
        message=f"decision {found.decision_id} can no longer be resumed ({found.reason}); the "
        "decision log records it as interrupted: nothing of it runs",
    )


def expire_due(inbox: Inbox, policy: Policy, now: datetime) -> list[PendingDecision]:
    """Close every request that waited `approval.expires_after` unanswered; the ones closed."""
    closed = []
    for pending in inbox.listed("waiting"):
        if now >= expires_at(pending, policy):
            why = f"unanswered for {format_duration(policy.approval.expires_after)}"
            if inbox.refuse(pending.decision_id, "expired", why):
                closed.append(pending)
    return closed


def resume_answer(pending: PendingDecision, now: datetime) -> Approval:
    """The answer a decision's graph resumes with, from its inbox entry."""
    if pending.status == "expired":
        return Approval(answer="expired", principal="", reason=pending.reason, at=now)
    if pending.answered_at is None or pending.answered_by is None:
        raise InvalidInput(f"decision {pending.decision_id} has no answer to resume with")
    return Approval(
        answer="approved" if pending.status == "approved" else "denied",
        principal=pending.answered_by,
        reason=pending.reason,
        at=pending.answered_at,
        channel=pending.channel or "cli",
        sender=pending.sender or pending.answered_by,
    )


def _local(policy: Policy, at: datetime) -> str:
    local = policy.local(at)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()}"


def history_for(root: Path, state: ClusterState) -> History:
    """What the gate at execution will count, read from the data dir: the log's executed
    actions and the loop's memory (for an answer given outside the daemon)."""
    from agent.signals.memory import read_memory

    memory = read_memory(root)
    try:
        audit = AuditLog.open(root, readonly=True)
    except AuditError:
        return History(last_busy=dict(memory.last_busy), watching_since=memory.watching_since)
    try:
        return audit.history(
            state.observed_at, last_busy=memory.last_busy, watching_since=memory.watching_since
        )
    finally:
        audit.close()
