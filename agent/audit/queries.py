"""The SQL that reads records back: one SELECT shape, its filters, and rows turned into records.

Reading does not verify: `AuditLog.verify()` does, over the raw rows. These helpers only parse
what was stored into typed `Record`s for show, explain, reconcile and the history — or, for the
export, stream the stored JSON as it is.
"""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent.audit.chain import parse_body, time_text
from agent.audit.db import connect
from agent.audit.explanations import export_row
from agent.audit.records import Intent, Kind, Outcome, Record
from tools.actions import Action

SELECT_RECORD = "SELECT body, hash, mac FROM records"


class ExecutedAction(BaseModel):
    """An action the backend carried out, when, and for which decision (policy history)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Action
    at: datetime
    decision_id: str
    ok: bool


def record_of(row: tuple[str, str, str | None]) -> Record:
    """A row of SELECT_RECORD as a typed record."""
    return parse_body(row[0], row[1], row[2])


def records_of(rows: Iterable[tuple[str, str, str | None]]) -> list[Record]:
    """Many rows as records, with the cyclic garbage collector paused meanwhile.

    Building 100,000 records keeps every one alive; the collector would rescan them all again
    and again (half the time of reading a large log). Nothing built here is cyclic garbage.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return [parse_body(*row) for row in rows]
    finally:
        if enabled:
            gc.enable()


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
    return records_of(rows)


def unfinished(conn: sqlite3.Connection) -> list[Record]:
    """Intents with neither an outcome nor an interrupted record, oldest first."""
    rows = conn.execute(
        "SELECT r.body, r.hash, r.mac FROM records r WHERE r.kind = 'intent' AND NOT "
        "EXISTS (SELECT 1 FROM records o WHERE o.decision_id = r.decision_id AND "
        "o.kind IN ('outcome', 'interrupted')) ORDER BY r.seq"
    ).fetchall()
    return records_of(rows)


def executed_since(conn: sqlite3.Connection, since: datetime) -> list[ExecutedAction]:
    """The actions the backend carried out since `since`, each with its decision's outcome."""
    rows = conn.execute(
        "SELECT o.body, o.hash, o.mac, i.body, i.hash, i.mac FROM records o JOIN "
        "records i ON i.decision_id = o.decision_id AND i.kind = 'intent' "
        "WHERE o.kind = 'outcome' AND o.time >= ? ORDER BY o.seq",
        (time_text(since),),
    ).fetchall()
    done: list[ExecutedAction] = []
    outcomes, intents = records_of(r[:3] for r in rows), records_of(r[3:] for r in rows)
    for outcome, intent in zip(outcomes, intents, strict=True):
        assert isinstance(outcome.payload, Outcome) and isinstance(intent.payload, Intent)
        for result in outcome.payload.results:
            if result.executed:
                done.append(
                    ExecutedAction(
                        action=intent.payload.proposals[result.index].action,
                        at=outcome.time,
                        decision_id=outcome.payload.decision_id,
                        ok=result.ok,
                    )
                )
    return done


def export_stream(path: Path) -> Iterator[dict[str, Any]]:
    """Every record of the log at `path` as `explanations.export_row` objects, in seq order.

    Streams through its own read-only connection in one snapshot: memory stays flat for any log
    size and the writer's connection is never held. Each decision's partner record (its intent,
    or its outcome) is looked up by index.
    """
    conn = connect(path, readonly=True)
    try:
        conn.execute("BEGIN")
        lookup = conn.cursor()

        def partner(decision: str, *kinds: str) -> dict[str, Any] | None:
            marks = ", ".join("?" * len(kinds))
            found = lookup.execute(
                f"SELECT body FROM records WHERE decision_id = ? AND kind IN ({marks}) "
                "ORDER BY seq LIMIT 1",
                (decision, *kinds),
            ).fetchone()
            return dict(json.loads(found[0])) if found else None

        for text, digest, mac in conn.execute(f"{SELECT_RECORD} ORDER BY seq"):
            body = json.loads(text)
            kind, decision = body["kind"], body["decision_id"]
            opening = closing = None
            if kind in ("intent", "plan"):
                opening, closing = body, partner(decision, "outcome", "interrupted")
            elif kind in ("outcome", "interrupted"):
                opening, closing = partner(decision, "intent"), body
            yield export_row(body, digest, mac, opening, closing)
        conn.execute("COMMIT")
    finally:
        conn.close()
