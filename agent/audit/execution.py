"""The execution record: writing it with what belongs to it, and checking the log against it.

An action runs only after the guard judged it again at execution, on a fresh observation, and
allowed it (agent/loop/gate.py). That judgement goes into the log as one `Execution` record,
in the same transaction as the decision's intent (when the intent was not written earlier, at
approval time) and the human answers it acted on, so that the log never shows an answer or a
verdict without the other. `unjudged_executions` reads a log back and names every executed
action that lacks an allowing verdict judged at its execution — the invariant the property
tests and the chaos soak hold the loop to.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from agent.audit.errors import AuditError
from agent.audit.queries import find
from agent.audit.records import ApprovalRecord, Execution, Intent, Outcome, Payload, Record
from agent.audit.store import AuditLog


def write_execution(
    log: AuditLog,
    execution: Execution,
    *,
    intent: Intent | None = None,
    approvals: Sequence[ApprovalRecord] = (),
) -> list[Record]:
    """Append [intent] + approvals + execution in one transaction (one fsync).

    `intent` is given when the decision has none in the log yet (it did not wait for anyone);
    otherwise the logged intent must be open and every approval must answer one of its pending
    proposals. A decision has at most one execution record: a second is refused, because act
    must have been interrupted after the first and reconciles instead of running again.
    """
    decision = execution.decision_id

    def fits(conn: sqlite3.Connection) -> None:
        rows = find(conn, decision, "intent", "plan", "execution", "outcome", "interrupted")
        kinds = [r.kind for r in rows]
        if "execution" in kinds:
            raise AuditError(
                f"decision {decision} already has an execution record in {log.path}; a "
                "resumed act reconciles what is there instead of judging and running again"
            )
        if intent is not None:
            if "intent" in kinds or "plan" in kinds:
                raise AuditError(
                    f"decision {decision} already has an intent in {log.path}; pass none"
                )
            return
        closed = [r for r in rows if r.kind in ("outcome", "interrupted")]
        logged = [r.payload for r in rows if isinstance(r.payload, Intent)]
        if not logged or closed:
            state = f"was closed as {closed[0].kind}" if closed else "has no intent"
            raise AuditError(
                f"execution of decision {decision}, but it {state} in {log.path}; re-observe "
                "and decide anew"
            )
        for approval in approvals:
            if approval.action_index not in logged[0].approvals_pending:
                raise AuditError(
                    f"action {approval.action_index} of decision {decision} does not wait for "
                    f"approval (pending: {list(logged[0].approvals_pending)})"
                )

    payloads: list[Payload] = [*([intent] if intent is not None else []), *approvals, execution]
    return log.append_batch(payloads, fits)


def unjudged_executions(log: AuditLog) -> list[str]:
    """Every executed action without an allow verdict judged at its execution, one line each.

    Judged at execution means: the decision's execution record comes before its outcome, allows
    that proposal, and was judged on an observation made no earlier than the decision's last
    human answer (an approval given after the observation cannot have been judged with it).
    """
    problems: list[str] = []
    by_decision: dict[str, list[Record]] = {}
    for record in log.records():
        if record.decision_id is not None:
            by_decision.setdefault(record.decision_id, []).append(record)
    for decision, records in by_decision.items():
        executions = [r for r in records if isinstance(r.payload, Execution)]
        answered = [r.payload.decided_at for r in records if isinstance(r.payload, ApprovalRecord)]
        for record in records:
            if not isinstance(record.payload, Outcome):
                continue
            for result in record.payload.results:
                if not result.executed:
                    continue
                problems += _judged(decision, result.index, record, executions, answered)
    return problems


def _judged(
    decision: str,
    index: int,
    outcome: Record,
    executions: list[Record],
    answered: list[datetime],
) -> list[str]:
    where = f"decision {decision} action {index + 1}"
    before = [r for r in executions if r.seq < outcome.seq]
    if not before:
        return [f"{where} ran without an execution record before its outcome"]
    judged = before[-1].payload
    assert isinstance(judged, Execution)
    verdict = next((v for v in judged.verdicts if v.index == index), None)
    if verdict is None or verdict.verdict != "allow":
        said = verdict.verdict if verdict else "no verdict"
        return [f"{where} ran although the guard at execution said {said}"]
    if any(at > judged.observed_at for at in answered):
        return [f"{where} was judged on an observation older than its approval"]
    return []
