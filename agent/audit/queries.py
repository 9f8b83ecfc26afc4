"""The SQL that reads records back: one SELECT shape, its filters, and rows turned into records.

Reading does not verify: `AuditLog.verify()` does, over the raw rows. These helpers only parse
what was stored into typed `Record`s for show, explain, export, reconcile and the history.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from agent.audit.records import Kind, Record, parse_body, time_text

SELECT_RECORD = "SELECT body, hash, mac FROM records"


def record_of(row: tuple[str, str, str | None]) -> Record:
    """A row of SELECT_RECORD as a typed record."""
    return parse_body(row[0], row[1], row[2])


def where(
    since: datetime | None, kind: Kind | None, decision_id: str | None
) -> tuple[str, tuple[Any, ...]]:
    """A WHERE clause (or nothing) and its arguments for the filters that are set."""
    clauses: list[str] = []
    args: list[Any] = []
    for clause, value in (
        ("time >= ?", time_text(since) if since else None),
        ("kind = ?", kind),
        ("decision_id = ?", decision_id),
    ):
        if value is not None:
            clauses.append(clause)
            args.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), tuple(args)


def find(conn: sqlite3.Connection, decision_id: str, *kinds: str) -> list[Record]:
    """The records of one decision with one of these kinds, in order."""
    marks = ", ".join("?" * len(kinds))
    rows = conn.execute(
        f"{SELECT_RECORD} WHERE decision_id = ? AND kind IN ({marks}) ORDER BY seq",
        (decision_id, *kinds),
    ).fetchall()
    return [record_of(r) for r in rows]
