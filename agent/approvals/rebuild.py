"""The inbox squared with the decision log at start: nothing waits silently, nothing is lost.

A decision that waits for a human is in two places: its graph thread (checkpoints.db, which
resumes it) and the inbox (inbox.db, which people answer); since it began to wait it is also in
the decision log, as an open intent with proposals pending approval. The log is the one that is
hash-chained and fsynced, so at start it decides:

- a thread waiting at its approval interrupt whose inbox entry is gone (a wiped or empty
  inbox.db) gets its entry back from its intent, so people can still answer it;
- an inbox entry (waiting or answered) whose thread is gone (the checkpoints were lost) can
  never be resumed: it is closed as `lost`, so `steward approve` says so instead of "resumed",
  and its open intent is closed as interrupted by the log's reconcile.

Requests that never had a graph thread — rotations a person asked for with `steward mode
rotate`, planned by "cli" — are left as they are: they are run by repeating that command.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from pathlib import Path

import structlog

from agent.approvals.inbox import Inbox
from agent.audit import AuditLog, Intent
from agent.support.datadir import CHECKPOINT_DB

REQUESTED_BY_PERSON = "cli"
"""The planner name of decisions a person asked for on the command line (no graph thread)."""
log = structlog.get_logger("steward.loop")


def settle_inbox(inbox: Inbox, audit: AuditLog, waiting: Collection[str]) -> list[str]:
    """Rebuild missing entries of `waiting` threads, close entries without a thread; returns
    the decision ids rebuilt or closed."""
    touched: list[str] = []
    for decision in waiting:
        if inbox.get(decision) is not None:
            continue
        intent = _intent(audit, decision)
        if intent is None or not intent.approvals_pending:
            continue
        pending = [intent.proposals[i] for i in intent.approvals_pending]
        inbox.ensure_waiting(
            decision,
            [p.action for p in pending],
            list(intent.approvals_pending),
            [p.message for p in pending],
            intent.observed_at,
        )
        log.warning("inbox entry rebuilt from the decision log", decision=decision)
        touched.append(decision)
    for entry in inbox.listed("waiting", "approved", "denied"):
        if entry.decision_id in waiting:
            continue
        intent = _intent(audit, entry.decision_id)
        if intent is not None and intent.planner == REQUESTED_BY_PERSON:
            continue
        reason = "its decision's checkpoint is gone, so it cannot be resumed"
        if inbox.refuse(entry.decision_id, "lost", reason):
            log.warning("waiting decision lost", decision=entry.decision_id, reason=reason)
            touched.append(entry.decision_id)
    return touched


def _intent(audit: AuditLog, decision: str) -> Intent | None:
    for record in audit.decision(decision):
        if isinstance(record.payload, Intent):
            return record.payload
    return None


def why_unresumable(data_dir: Path, audit: AuditLog, decision: str) -> str | None:
    """Why a waiting decision could never be resumed, or None when it can be.

    For `steward approve` before the agent's next start notices: the log closed the decision
    (interrupted, or it has an outcome), or its graph thread is not in the checkpoints any more
    (deleted, emptied). Read-only; a rotation a person asked for needs no thread."""
    records = audit.decision(decision)
    closed = [r.kind for r in records if r.kind in ("outcome", "interrupted")]
    if closed:
        return f"the decision log closed it ({closed[0]})"
    intent = next((r.payload for r in records if isinstance(r.payload, Intent)), None)
    if intent is not None and intent.planner == REQUESTED_BY_PERSON:
        return None
    path = data_dir / CHECKPOINT_DB
    if not path.is_file():
        return f"its decision's checkpoint is gone ({path} does not exist)"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            row = conn.execute(
                "SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", (decision,)
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return f"its decision's checkpoint is gone ({path} holds no checkpoints)"
    return None if row else f"its decision's checkpoint is gone (not in {path})"
