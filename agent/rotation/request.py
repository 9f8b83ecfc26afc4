"""A rotation a person asks for (`steward mode rotate`): judged, recorded, approved, then run.

It takes the same door as the loop's actions: the policy engine judges a one-action plan on a
fresh observation; the decision log gets the intent before anything runs and the outcome after;
a rotation that needs approval waits in the approval inbox (`steward pending`), is answered with
`steward approve ID`, and runs when the request is repeated with `--decision ID`. A denied
rotation runs nothing and the log says which rules denied it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.approvals.inbox import Inbox
from agent.audit import ActionOutcome, ApprovalRecord, AuditLog, Check, Intent, Outcome, proposals
from agent.rotation.runner import open_rotation, result_of
from policies.engine import judge
from policies.history import History
from policies.judgement import Verdict
from policies.model import Policy
from tools.actions import Plan, RotateMode
from tools.approval import Approval
from tools.backends.parts import Parts
from tools.errors import InvalidInput
from tools.model import ClusterState
from tools.modes import RotationOutcome

Status = Literal["ran", "denied", "pending", "refused_by_human"]


class RequestResult(BaseModel):
    """What became of one request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    status: Status
    verdict: Verdict
    message: str
    outcome: RotationOutcome | None = None


def history_of(audit: AuditLog, state: ClusterState) -> History:
    """What was executed in the last day, from the decision log (cooldowns, budgets)."""
    return audit.history(state.observed_at)


def judge_rotation(
    target: str, state: ClusterState, policy: Policy, history: History
) -> tuple[Plan, Verdict]:
    """The policy's verdict on rotating to `target` now."""
    action = RotateMode(target_mode=target, reason="requested with `steward mode rotate`")
    plan = Plan(actions=(action,), rationale="a person asked for this rotation", planner="cli")
    return plan, judge(plan, state, policy, history).verdicts[0]


class RotationRequests:
    """Rotations people ask for, over one data dir's cluster, policy and decision log."""

    def __init__(self, parts: Parts, data_dir: Path, policy: Policy, audit: AuditLog) -> None:
        self.parts = parts
        self.cluster = parts.cluster()
        self.data_dir = data_dir
        self.policy = policy
        self.audit = audit

    def request(self, target: str) -> RequestResult:
        """Judge a rotation to `target`, record it, and run it if the policy allows it now."""
        state = self.cluster.observe()
        if state.mode(target) is None:
            known = ", ".join(m.name for m in state.modes) or "none"
            raise InvalidInput(f"mode {target!r} does not exist (known: {known})")
        plan, verdict = judge_rotation(target, state, self.policy, history_of(self.audit, state))
        intent = Intent(
            observed_at=state.observed_at,
            observation_digest=state.digest(),
            planner="cli",
            rationale=plan.rationale,
            proposals=proposals(plan, [verdict]),
        )
        self.audit.write_intent(intent)
        decision = intent.decision_id
        if verdict.decision == "deny":
            _skipped(self.audit, decision, f"denied by policy ({', '.join(verdict.rule_ids)})")
            return RequestResult(
                decision_id=decision, status="denied", verdict=verdict, message=verdict.message
            )
        if verdict.decision == "needs_approval":
            inbox = Inbox.open(self.data_dir)
            try:
                inbox.ensure_waiting(
                    decision, [verdict.action], [0], [verdict.message], state.observed_at
                )
            finally:
                inbox.close()
            groups = ", ".join(verdict.approvers) or "an approver group"
            return RequestResult(
                decision_id=decision,
                status="pending",
                verdict=verdict,
                message=f"{verdict.message}; a member of {groups} approves it with "
                f"`steward approve {decision} --as NAME`, then "
                f"`steward mode rotate {target} --decision {decision}` runs it",
            )
        return self._run(decision, target, verdict, ())

    def answered(self, decision: str, target: str) -> RequestResult:
        """Run a rotation to `target` that waited for approval, once a person answered it."""
        inbox = Inbox.open(self.data_dir)
        try:
            found = inbox.get(decision)
            if found is None or not found.actions or not isinstance(found.actions[0], RotateMode):
                raise InvalidInput(
                    f"no rotation decision {decision} in {inbox.path}; `steward pending` lists them"
                )
            action = found.actions[0]
            if action.target_mode != target:
                raise InvalidInput(
                    f"decision {decision} rotates to {action.target_mode}, not {target}; "
                    f"run `steward mode rotate {action.target_mode} --decision {decision}`"
                )
            state = self.cluster.observe()
            _, verdict = judge_rotation(
                action.target_mode, state, self.policy, history_of(self.audit, state)
            )
            ttl = self.policy.approval.expires_after
            if found.status == "waiting" and state.observed_at >= found.created_at + ttl:
                inbox.refuse(decision, "expired", "unanswered within approval.expires_after")
                found = found.model_copy(update={"status": "expired"})
            answered = found.answered_at
            late = answered is not None and (
                answered > found.created_at + ttl or state.observed_at > answered + ttl
            )
            if found.status in ("expired", "lost") or (found.status == "approved" and late):
                why = (
                    f"refused by approval.expired: the request of "
                    f"{found.created_at:%Y-%m-%d %H:%M} UTC was not carried out within "
                    "approval.expires_after; ask again with `steward mode rotate`"
                )
                if _open_intent(self.audit, decision):
                    _skipped(self.audit, decision, why)
                inbox.mark_resumed(decision)
                return RequestResult(
                    decision_id=decision, status="denied", verdict=verdict, message=why
                )
            if found.status == "waiting":
                return RequestResult(
                    decision_id=decision,
                    status="pending",
                    verdict=verdict,
                    message=f"{decision} still waits: `steward approve {decision}`",
                )
            if found.status == "denied":
                why = f"denied by {found.answered_by}: {found.reason or 'no reason given'}"
                _skipped(self.audit, decision, why)
                inbox.mark_resumed(decision)
                return RequestResult(
                    decision_id=decision, status="refused_by_human", verdict=verdict, message=why
                )
            principal = found.answered_by or "unknown"
            at = found.answered_at or state.observed_at
            if verdict.decision == "deny":
                _skipped(self.audit, decision, f"denied by policy on re-check: {verdict.message}")
                inbox.mark_resumed(decision)
                return RequestResult(
                    decision_id=decision, status="denied", verdict=verdict, message=verdict.message
                )
            approval = Approval(
                principal=principal,
                at=at,
                channel=found.channel or "cli",
                sender=found.sender or principal,
            )
            self.audit.write_approval(ApprovalRecord.of(decision, 0, approval))
            inbox.mark_resumed(decision)
        finally:
            inbox.close()
        return self._run(decision, action.target_mode, verdict, (approval,))

    def finish_open(self) -> RotationOutcome | None:
        """Finish the rotation a killed process left open (commit or roll back); close its
        decision in the log. None when nothing was open."""
        outcome = open_rotation(
            self.cluster, self.data_dir, self.policy, self.audit, parts=self.parts
        ).resume()
        if outcome is not None:
            decision = outcome.decision_id
            if decision is not None and _open_intent(self.audit, decision):
                _record_outcome(self.audit, decision, outcome)
        return outcome

    def _run(
        self, decision: str, target: str, verdict: Verdict, approvals: tuple[Approval, ...]
    ) -> RequestResult:
        rotation = open_rotation(
            self.cluster, self.data_dir, self.policy, self.audit, parts=self.parts
        )
        outcome = rotation.rotate(target, approvals, decision_id=decision)
        _record_outcome(self.audit, decision, outcome)
        return RequestResult(
            decision_id=decision,
            status="ran",
            verdict=verdict,
            message=outcome.message,
            outcome=outcome,
        )


def _record_outcome(audit: AuditLog, decision: str, outcome: RotationOutcome) -> None:
    checks = tuple(
        Check(name=f"probe:{p.workload}", ok=p.ok, detail=p.message) for p in outcome.probes
    )
    serving = Check(
        name="serving",
        ok=outcome.final_mode is not None,
        detail=f"{outcome.final_mode or 'nothing'} serves with {', '.join(outcome.serving)}"
        if outcome.serving
        else "nothing serves",
    )
    audit.write_outcome(
        Outcome(
            decision_id=decision,
            results=(ActionOutcome.from_result(0, result_of(outcome)),),
            verification=(*checks, serving),
        )
    )


def _skipped(audit: AuditLog, decision: str, why: str) -> None:
    audit.write_outcome(Outcome(decision_id=decision, results=(ActionOutcome.skipped(0, why),)))


def _open_intent(audit: AuditLog, decision: str) -> bool:
    kinds = {r.kind for r in audit.decision(decision)}
    return "intent" in kinds and not kinds & {"outcome", "interrupted"}
