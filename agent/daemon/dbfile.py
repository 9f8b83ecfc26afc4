"""Opening a SQLite state file of the data dir (inbox, checkpoints) without mistaking damage for
a fresh start.

SQLite takes a 0-byte file for an empty database and creates the tables again: a truncated
inbox.db silently dropped every pending approval that way. A file that is not a database at all
raised a bare `sqlite3.DatabaseError` deep in a command. Both are refused here with the file,
what is wrong and what to do; a missing file is a fresh start and is created.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from tools.errors import PermanentError


class DamagedFile(PermanentError):
    """A state file of the data dir is empty or not a database; the message says what to do."""


def connect(
    path: Path, what: str, opener: Callable[[Path], sqlite3.Connection] = sqlite3.connect
) -> sqlite3.Connection:
    """`opener(path)` (sqlite3.connect with its options), refusing an empty or corrupt file."""
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
