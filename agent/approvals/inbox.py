"""The approval inbox: decisions waiting for a human, and the answers people gave.

A decision with an action that needs approval stops at the graph's `interrupt()`. The approve
node puts it here (idempotently: a resumed node runs again from its first line); `steward
pending` lists it; `steward approve` / `steward deny` write the answer here; the running daemon
(or the next `steward run`) picks the answer up and resumes the decision's graph thread. The CLI
never resumes a decision itself: the daemon stays the one writer of the cluster and of the log.

SQLite in WAL mode at DATA_DIR/inbox.db, so the CLI and the daemon may use it at the same time.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.support import dbfile
from tools.actions import Action, dump_action, parse_actions
from tools.approval import Channel
from tools.errors import InvalidInput

DB_NAME = "inbox.db"
Status = Literal["waiting", "approved", "denied", "resumed", "expired", "lost"]
"""waiting for an answer; approved or denied, not yet picked up by the agent; resumed (the agent
took the answer); expired (nobody answered within approval.expires_after); lost (the agent has
no way left to resume it, e.g. its checkpoints are gone: refused in the decision log)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pending (
    decision_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    actions TEXT NOT NULL,
    indexes TEXT NOT NULL,
    messages TEXT NOT NULL,
    status TEXT NOT NULL,
    answered_by TEXT,
    reason TEXT NOT NULL DEFAULT '',
    answered_at TEXT,
    channel TEXT,
    sender TEXT,
    resumed_at TEXT
);
"""
_ADDED_COLUMNS = (("channel", "TEXT"), ("sender", "TEXT"), ("resumed_at", "TEXT"))
"""Columns later than the first schema, added to an older inbox when it is opened."""


class PendingDecision(BaseModel):
    """One decision waiting for (or answered by) a human."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    created_at: datetime
    actions: tuple[Action, ...]
    """The actions that wait for approval."""
    indexes: tuple[int, ...]
    """Their positions in the decision's plan (the decision log's proposal indexes)."""
    messages: tuple[str, ...]
    """The policy's sentence for each: which rule asks for approval and why."""
    status: Status
    answered_by: str | None = None
    """The principal who answered, as the policy's approver groups name them."""
    reason: str = ""
    answered_at: datetime | None = None
    channel: Channel | None = None
    """Where the answer came from (cli, slack)."""
    sender: str | None = None
    """Who the channel vouches sent it: the OS user, a chat user id."""


class Inbox:
    """The approval inbox of one data dir."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, data_dir: Path) -> Inbox:
        path = data_dir / DB_NAME
        conn = dbfile.open_shared(path, "the approval inbox", _SCHEMA, synchronous="FULL")
        have = {row[1] for row in conn.execute("PRAGMA table_info(pending)")}
        for name, kind in _ADDED_COLUMNS:
            if name not in have:
                conn.execute(f"ALTER TABLE pending ADD COLUMN {name} {kind}")
        return cls(conn, path)

    def close(self) -> None:
        self._conn.close()

    def ensure_waiting(
        self,
        decision_id: str,
        actions: Sequence[Action],
        indexes: Sequence[int],
        messages: Sequence[str],
        at: datetime,
    ) -> None:
        """Put a decision in the inbox unless it is there already (safe to repeat)."""
        self._conn.execute(
            "INSERT OR IGNORE INTO pending (decision_id, created_at, actions, indexes, messages, "
            "status) VALUES (?, ?, ?, ?, ?, 'waiting')",
            (
                decision_id,
                at.isoformat(),
                json.dumps([dump_action(a) for a in actions]),
                json.dumps(list(indexes)),
                json.dumps(list(messages)),
            ),
        )

    def get(self, decision_id: str) -> PendingDecision | None:
        row = self._conn.execute(f"{_SELECT} WHERE decision_id = ?", (decision_id,)).fetchone()
        return _pending(row) if row else None

    def listed(self, *statuses: Status) -> list[PendingDecision]:
        """Entries with one of `statuses`, oldest first."""
        marks = ", ".join("?" * len(statuses))
        rows = self._conn.execute(
            f"{_SELECT} WHERE status IN ({marks}) ORDER BY created_at, decision_id", statuses
        ).fetchall()
        return [_pending(r) for r in rows]

    def answer(
        self,
        decision_id: str,
        *,
        approved: bool,
        by: str,
        reason: str,
        at: datetime,
        channel: Channel = "cli",
        sender: str | None = None,
    ) -> PendingDecision:
        """Record a human's answer; only a waiting decision can be answered, and only once."""
        status: Status = "approved" if approved else "denied"
        cursor = self._conn.execute(
            "UPDATE pending SET status = ?, answered_by = ?, reason = ?, answered_at = ?, "
            "channel = ?, sender = ? WHERE decision_id = ? AND status = 'waiting'",
            (status, by, reason, at.isoformat(), channel, sender or by, decision_id),
        )
        found = self.get(decision_id)
        if found is None:
            known = ", ".join(p.decision_id for p in self.listed("waiting")) or "none"
            raise InvalidInput(
                f"no decision {decision_id} waits for approval in {self.path} (waiting: "
                f"{known}); list them with `steward pending`"
            )
        if cursor.rowcount == 0:
            raise InvalidInput(
                f"decision {decision_id} was already {found.status}"
                + (f" by {found.answered_by}" if found.answered_by else "")
                + "; an answer cannot be changed"
            )
        return found

    def refuse(self, decision_id: str, status: Literal["expired", "lost"], reason: str) -> bool:
        """Close a decision that will not run: expired (only while it waits: False when an
        answer came first, and that answer stands) or lost (whatever it was answered)."""
        open_ones = "('waiting')" if status == "expired" else "('waiting', 'approved', 'denied')"
        cursor = self._conn.execute(
            f"UPDATE pending SET status = ?, reason = ? WHERE decision_id = ? AND status IN "
            f"{open_ones}",
            (status, reason, decision_id),
        )
        return cursor.rowcount > 0

    def to_resume(self) -> list[PendingDecision]:
        """Answered (or expired) decisions the agent has not resumed yet, oldest first."""
        rows = self._conn.execute(
            f"{_SELECT} WHERE status IN ('approved', 'denied') OR (status = 'expired' AND "
            "resumed_at IS NULL) ORDER BY created_at, decision_id"
        ).fetchall()
        return [_pending(r) for r in rows]

    def mark_resumed(self, decision_id: str) -> None:
        """The agent took the answer: an answered one becomes `resumed`, an expired one stays
        `expired` (what `steward approve` then reports), both stamped as taken."""
        self._conn.execute(
            "UPDATE pending SET status = CASE WHEN status IN ('expired', 'lost') THEN status "
            "ELSE 'resumed' END, resumed_at = datetime('now') WHERE decision_id = ?",
            (decision_id,),
        )

    def open_keys(self) -> set[tuple[str, str]]:
        """(type, target) of every action still waiting or answered but not yet resumed."""
        return {
            (a.type, a.target)
            for p in self.listed("waiting", "approved", "denied")
            for a in p.actions
        }


_SELECT = (
    "SELECT decision_id, created_at, actions, indexes, messages, status, answered_by, reason, "
    "answered_at, channel, sender FROM pending"
)


def _pending(row: tuple[str, ...]) -> PendingDecision:
    return PendingDecision(
        decision_id=row[0],
        created_at=datetime.fromisoformat(row[1]),
        actions=tuple(parse_actions(json.loads(row[2]))),
        indexes=tuple(json.loads(row[3])),
        messages=tuple(json.loads(row[4])),
        status=row[5],
        answered_by=row[6],
        reason=row[7] or "",
        answered_at=datetime.fromisoformat(row[8]) if row[8] else None,
        # Answers older than channels came from the only channel there was, the CLI.
        channel=row[9] if row[9] in ("cli", "slack") else ("cli" if row[8] else None),
        sender=row[10],
    )
