"""What chat-ops keeps on disk: approval messages, the notification outbox, seen requests.

SQLite in WAL mode at DATA_DIR/chatops.db, beside the approval inbox, so that what Slack shows
survives a restart or a kill -9 of the daemon:
- `messages`: the Slack message (channel, ts) of each decision posted for approval, and which
  state of the decision it shows now; a button press finds its decision here, and the sender
  updates the message when the inbox moves on;
- `outbox`: every notification, written before any attempt to send it and marked sent only
  once Slack took it; attempts and the time of the next one give the backoff;
- `seen`: the signatures of HTTP requests already handled, so a replayed request is refused;
- `requests`: rotations asked for from Slack, run once their approval comes.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from agent.support import dbfile

DB_NAME = "chatops.db"
REPLAY_WINDOW_S = 600.0
"""Signatures are kept this long: beyond 5 minutes Bolt refuses the timestamp anyway."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    decision_id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    ts TEXT NOT NULL,
    shown TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    notice TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL DEFAULT 0,
    sent_at REAL,
    error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (sent_at, next_at);
CREATE TABLE IF NOT EXISTS seen (
    signature TEXT PRIMARY KEY,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS requests (
    decision_id TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    user TEXT NOT NULL,
    ran INTEGER NOT NULL DEFAULT 0
);
"""


@dataclass(frozen=True)
class Message:
    decision_id: str
    channel: str
    ts: str
    shown: str


@dataclass(frozen=True)
class Queued:
    id: int
    notice: str
    attempts: int


class ChatopsStore:
    """chatops.db of one data dir; one connection, safe to share between threads."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, data_dir: Path) -> ChatopsStore:
        path = data_dir / DB_NAME
        # NORMAL: in WAL mode a commit survives the process being killed (kill -9), which is
        # what this file must outlive; FULL would also survive a power cut at an fsync per
        # notice, paid on the tick thread. What a power cut could cost is
        # a notice the decision log and the daemon's log still hold, or a reposted approval.
        conn = dbfile.open_shared(path, "the chat-ops store", _SCHEMA, synchronous="NORMAL")
        return cls(conn, path)

    def close(self) -> None:
        self._conn.close()

    # -- approval messages ------------------------------------------------------------------------

    def message(self, decision_id: str) -> Message | None:
        row = self._conn.execute(
            "SELECT decision_id, channel, ts, shown FROM messages WHERE decision_id = ?",
            (decision_id,),
        ).fetchone()
        return Message(*row) if row else None

    def messages(self) -> list[Message]:
        """The messages of decisions not yet settled (resumed or expired): those the sender
        may still have to update; settled ones are left alone for good."""
        rows = self._conn.execute(
            "SELECT decision_id, channel, ts, shown FROM messages "
            "WHERE shown NOT IN ('resumed', 'expired')"
        )
        return [Message(*row) for row in rows.fetchall()]

    def posted(self, decision_id: str, channel: str, ts: str, shown: str) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO messages (decision_id, channel, ts, shown) VALUES (?, ?, ?, ?)",
            (decision_id, channel, ts, shown),
        )

    def shown(self, decision_id: str, shown: str) -> None:
        self._conn.execute(
            "UPDATE messages SET shown = ? WHERE decision_id = ?", (shown, decision_id)
        )

    # -- the outbox -------------------------------------------------------------------------------

    def enqueue(self, created_at: str, notice: str) -> int:
        cursor = self._conn.execute(
            "INSERT INTO outbox (created_at, notice) VALUES (?, ?)", (created_at, notice)
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def due(self, now: float) -> list[Queued]:
        """Unsent notifications whose next attempt is due, oldest first."""
        rows = self._conn.execute(
            "SELECT id, notice, attempts FROM outbox WHERE sent_at IS NULL AND next_at <= ? "
            "ORDER BY id",
            (now,),
        ).fetchall()
        return [Queued(*row) for row in rows]

    def unsent(self) -> int:
        row = self._conn.execute("SELECT count(*) FROM outbox WHERE sent_at IS NULL").fetchone()
        return int(row[0])

    def sent(self, ids: list[int], now: float) -> None:
        self._conn.executemany(
            "UPDATE outbox SET sent_at = ?, error = '' WHERE id = ?", [(now, i) for i in ids]
        )

    def failed(self, ids: list[int], next_at: float, error: str) -> None:
        self._conn.executemany(
            "UPDATE outbox SET attempts = attempts + 1, next_at = ?, error = ? WHERE id = ?",
            [(next_at, error[:500], i) for i in ids],
        )

    # -- replayed requests ------------------------------------------------------------------------

    def first_sight(self, signature: str, now: float) -> bool:
        """True the first time a request signature is seen (within the replay window)."""
        self._conn.execute("DELETE FROM seen WHERE at < ?", (now - REPLAY_WINDOW_S,))
        cursor = self._conn.execute(
            "INSERT OR IGNORE INTO seen (signature, at) VALUES (?, ?)", (signature, now)
        )
        return cursor.rowcount == 1

    # -- rotations asked for from Slack -----------------------------------------------------------

    def requested(self, decision_id: str, target: str, user: str) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO requests (decision_id, target, user) VALUES (?, ?, ?)",
            (decision_id, target, user),
        )

    def take_request(self, decision_id: str) -> str | None:
        """The target of a Slack rotation request not yet run, marking it run (once only)."""
        cursor = self._conn.execute(
            "UPDATE requests SET ran = 1 WHERE decision_id = ? AND ran = 0", (decision_id,)
        )
        if cursor.rowcount == 0:
            return None
        row = self._conn.execute(
            "SELECT target FROM requests WHERE decision_id = ?", (decision_id,)
        ).fetchone()
        return str(row[0])
