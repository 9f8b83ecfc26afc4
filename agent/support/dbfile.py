"""Opening a SQLite state file of the data dir (inbox, chat-ops store, checkpoints) without
mistaking damage for a fresh start.

SQLite takes a 0-byte file for an empty database and creates the tables again: a truncated
inbox.db silently dropped every pending approval that way. A file that is not a database at all
raised a bare `sqlite3.DatabaseError` deep in a command. Both are refused here with the file,
what is wrong and what to do; a missing file is a fresh start and is created.

SQLite itself creates a database file empty and writes its first page only with the first
write: a process killed in between left a 0-byte file that the next start refused as damaged
(the chaos soak's kills found it). A fresh database is therefore made aside, with its header
written and synced, and linked into place whole: at the file's own name there is either
nothing or a database, and a 0-byte file there is damage.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from agent.support.durable import fsync_dir
from tools.errors import InvalidInput


class DamagedFile(InvalidInput):
    """A state file of the data dir is empty, unparseable, of the wrong type or not a database;
    the message says what to do. Bad input to the agent (exit 2): never crashed on or rebuilt."""


def connect(
    path: Path, what: str, opener: Callable[[Path], sqlite3.Connection] = sqlite3.connect
) -> sqlite3.Connection:
    """`opener(path)` (sqlite3.connect with its options), refusing an empty or corrupt file."""
    if not path.exists():
        _create(path)
    if path.is_file() and path.stat().st_size == 0:
        raise DamagedFile(
            f"{path}: {what} is an empty (0-byte) file, not a fresh one: what it held is lost. "
            "Restore it from a backup; only if that cannot be, move it away to start without it"
        )
    conn = opener(path)
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
        problem = None if row is not None and row[0] == "ok" else str(row[0] if row else "?")
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    if problem is not None:
        conn.close()
        raise DamagedFile(
            f"{path}: {what} is damaged ({problem}). Restore it from a backup; only if that "
            "cannot be, move it away to start without it"
        )
    return conn


def open_shared(
    path: Path, what: str, schema: str, *, synchronous: Literal["NORMAL", "FULL"]
) -> sqlite3.Connection:
    """A state file of the data dir as one autocommit connection that threads share, in WAL
    mode at `synchronous`, refused when damaged (`connect`), its `schema` made where missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(
        path,
        what,
        lambda p: sqlite3.connect(p, isolation_level=None, check_same_thread=False, timeout=10),
    )
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.executescript(schema)
    return conn


APPLICATION_ID = 0x53545744
"""Written into a fresh database's header ("STWD"): a write SQLite must make before the file
holds its first page."""


def _create(path: Path) -> None:
    """An empty database at `path`, appearing whole: made at a name of its own beside it, its
    header written and synced, then linked in. Should another process have made it meanwhile,
    theirs stands."""
    aside = path.with_name(f".{path.name}.creating-{os.getpid()}")
    aside.unlink(missing_ok=True)
    try:
        conn = sqlite3.connect(aside)
        try:
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.commit()
        finally:
            conn.close()
        with aside.open("rb") as made:
            os.fsync(made.fileno())
        try:
            os.link(aside, path)
        except FileExistsError:
            return
        fsync_dir(path.parent)
    finally:
        aside.unlink(missing_ok=True)
