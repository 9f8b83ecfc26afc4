"""The SQLite file behind the decision log: its tables, its pragmas and the writer's lock.

Tables: `records` (one row per record; the hashed body plus indexed columns for queries; the
indexes end in seq, the rowid, so "the last N of a kind" reads N entries, and they are few because
each one costs the append a page),
`head` (the anchor: last seq, hash and MAC, updated in the same transaction as each append),
`meta` (the file layout version). Triggers refuse UPDATE and DELETE on `records`.

WAL with synchronous=FULL: a commit returns after the WAL is fsynced, and readers keep reading a
consistent snapshot while the writer appends. The writer holds an exclusive flock on
`audit.db.lock` for its whole life; the file holds its pid for the error message.

Why the anchor is a row and not a file: it must change atomically with the records. A separate
file would need its own fsync and could disagree with the database after a crash (a false
"truncated"); a row written in the same transaction disagrees only if someone edited the file.
With a key, the anchor's MAC also stops a cut tail from being re-anchored. What a row cannot
catch is the whole file going (deleted, emptied, replaced): for that the head is also witnessed
outside the file, in audit.head (witness.py), allowed to lag the log by one append, never to lead.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from agent.audit.errors import AuditError, LogDamaged
from agent.support import lockfile

AUTOCHECKPOINT_PAGES = 4000
"""WAL pages (4 KiB) before an append also checkpoints. Copying the WAL into the database costs two
more fsyncs; the daemon calls `AuditLog.checkpoint()` between ticks so that appends — on the
path of every action — rarely pay for it. This is the safety net when nobody does."""

LAYOUT_VERSION = "2"
"""The tables' shape; a file with another layout is refused, never migrated silently."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    kind TEXT NOT NULL,
    decision_id TEXT,
    prev_hash TEXT NOT NULL,
    body TEXT NOT NULL,
    hash TEXT NOT NULL,
    mac TEXT
);
CREATE INDEX IF NOT EXISTS records_decision ON records(decision_id, kind);
CREATE INDEX IF NOT EXISTS records_kind ON records(kind);
CREATE TABLE IF NOT EXISTS head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL,
    mac TEXT
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS records_append_only_update BEFORE UPDATE ON records
BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS records_append_only_delete BEFORE DELETE ON records
BEGIN SELECT RAISE(ABORT, 'the decision log is append-only'); END;
"""


def check_layout(conn: sqlite3.Connection, path: Path, *, create: bool) -> None:
    """Refuse a file of another layout; a writer stamps a new file with this one."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE name = 'layout'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _not_a_log(path, exc) from None
    if row is None and create:
        conn.execute("INSERT INTO meta (name, value) VALUES ('layout', ?)", (LAYOUT_VERSION,))
    elif row is None or row[0] != LAYOUT_VERSION:
        found = row[0] if row else "none"
        raise AuditError(
            f"{path} has table layout {found}, this steward uses layout {LAYOUT_VERSION}: open "
            "it with the steward that wrote it, or move it away and use another --data-dir"
        )


def check_integrity(conn: sqlite3.Connection, path: Path, *, full: bool = False) -> None:
    """SQLite's own check of every page (`quick_check`; `integrity_check` when `full`): a
    garbled page is named here, at open, instead of a DatabaseError in the middle of a command."""
    pragma = "integrity_check" if full else "quick_check"
    try:
        found = [str(row[0]) for row in conn.execute(f"PRAGMA {pragma}(5)").fetchall()]
    except sqlite3.DatabaseError as exc:
        found = [str(exc)]
    if found != ["ok"]:
        raise LogDamaged(
            f"{path} is damaged: SQLite's integrity check says: {'; '.join(found)}. Nothing was "
            "written to it. Restore audit.db from a backup; keep the damaged file as evidence "
            "(move the data dir away) — it is never rebuilt or repaired in place"
        )


def connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    """The log's connection. A reader opens it read-only; a copy this user may not write (an
    archived or mounted log: neither it nor its directory writable) is read as immutable, since
    SQLite could not make the shared-memory file that reading a WAL-mode database takes."""
    target: str | Path = path
    if readonly:
        frozen = not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))
        target = f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if frozen else "")
    try:
        conn = sqlite3.connect(
            target, isolation_level=None, check_same_thread=False, timeout=10.0, uri=readonly
        )
    except sqlite3.OperationalError as exc:
        raise AuditError(f"{path}: cannot open the decision log: {exc}") from None
    try:
        if readonly:
            conn.execute("PRAGMA query_only = ON")
        else:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(f"PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES}")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise _not_a_log(path, exc) from None
    return conn


def _not_a_log(path: Path, exc: sqlite3.DatabaseError) -> AuditError:
    """A file that SQLite cannot read as a database: named, never overwritten."""
    return LogDamaged(
        f"{path} is not a readable decision log ({exc}); it was left as it is. Restore it from "
        "a backup, or move it away (it is evidence) and use another --data-dir"
    )


def take_writer_lock(path: Path) -> int:
    """The decision log's writer lock (`audit.db.lock`): one leader writes, readers never lock."""
    return lockfile.take(
        path.with_name(path.name + ".lock"),
        lambda holder: AuditError(
            f"another process (pid {holder}) is writing the decision log {path}; only the "
            "leader writes — stop it first, or open the log read-only"
        ),
    )


release = lockfile.release
