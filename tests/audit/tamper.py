"""What an attacker with write access to audit.db can do, done with plain sqlite3."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

from agent.audit import head_file
from agent.audit.chain import canonical_json, hash_body, mac_of
from agent.audit.verify import anchor_mac

Body = dict[str, Any]


def connect(db: Path) -> sqlite3.Connection:
    """A connection with the append-only triggers dropped, as a determined editor would."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER IF EXISTS records_append_only_update")
    conn.execute("DROP TRIGGER IF EXISTS records_append_only_delete")
    return conn


def body(conn: sqlite3.Connection, seq: int) -> Body:
    return dict(
        json.loads(conn.execute("SELECT body FROM records WHERE seq = ?", (seq,)).fetchone()[0])
    )


def edit_payload(db: Path, seq: int, change: Callable[[Body], None]) -> None:
    """Change a record's body in place, leaving its stored hash as it was."""
    with closing(connect(db)) as conn:
        data = body(conn, seq)
        change(data["payload"])
        conn.execute("UPDATE records SET body = ? WHERE seq = ?", (canonical_json(data), seq))


def set_column(db: Path, seq: int, column: str, value: str) -> None:
    with closing(connect(db)) as conn:
        conn.execute(f"UPDATE records SET {column} = ? WHERE seq = ?", (value, seq))


def delete(db: Path, seq: int) -> None:
    with closing(connect(db)) as conn:
        conn.execute("DELETE FROM records WHERE seq = ?", (seq,))


def swap(db: Path, a: int, b: int) -> None:
    """Exchange the places of two whole records."""
    with closing(connect(db)) as conn:
        conn.execute("UPDATE records SET seq = -1 WHERE seq = ?", (a,))
        conn.execute("UPDATE records SET seq = ? WHERE seq = ?", (a, b))
        conn.execute("UPDATE records SET seq = ? WHERE seq = -1", (b,))


def cut_tail(db: Path, keep_to: int) -> None:
    with closing(connect(db)) as conn:
        conn.execute("DELETE FROM records WHERE seq > ?", (keep_to,))


def drop_anchor(db: Path) -> None:
    with closing(connect(db)) as conn:
        conn.execute("DELETE FROM head")


def reforge(
    db: Path,
    seq: int,
    change: Callable[[Body], None],
    key: bytes | None = None,
    strip_macs: bool = False,
) -> None:
    """Edit one record, then recompute every hash after it and the anchor: a re-forged chain.

    Without the real key the MACs are left as they were (or stripped, or forged with `key`).
    """
    with closing(connect(db)) as conn:
        prev = conn.execute("SELECT hash FROM records WHERE seq = ?", (seq - 1,)).fetchone()
        prev_hash = prev[0] if prev else "0" * 64
        last = conn.execute("SELECT max(seq) FROM records").fetchone()[0]
        for n in range(seq, last + 1):
            data = body(conn, n)
            if n == seq:
                change(data["payload"])
            data["prev_hash"] = prev_hash
            text = canonical_json(data)
            digest = hash_body(text)
            mac = conn.execute("SELECT mac FROM records WHERE seq = ?", (n,)).fetchone()[0]
            mac = None if strip_macs else (mac_of(key, digest) if key else mac)
            conn.execute(
                "UPDATE records SET prev_hash = ?, body = ?, hash = ?, mac = ? WHERE seq = ?",
                (prev_hash, text, digest, mac, n),
            )
            prev_hash = digest
        head_mac = conn.execute("SELECT mac FROM head").fetchone()[0]
        head_mac = None if strip_macs else (anchor_mac(key, last, prev_hash) if key else head_mac)
        conn.execute("UPDATE head SET hash = ?, mac = ?", (prev_hash, head_mac))


def rehash(db: Path, seq: int, change: Callable[[Body], None], whole: bool = False) -> None:
    """Edit one record (its payload, or the `whole` body) and give it a fresh, matching hash —
    but leave its successors alone."""
    with closing(connect(db)) as conn:
        data = body(conn, seq)
        change(data if whole else data["payload"])
        text = canonical_json(data)
        conn.execute(
            "UPDATE records SET body = ?, hash = ? WHERE seq = ?", (text, hash_body(text), seq)
        )


def reanchor(db: Path, seq: int) -> None:
    """Point the anchor at record `seq` (after cutting the tail), without the key."""
    with closing(connect(db)) as conn:
        digest = conn.execute("SELECT hash FROM records WHERE seq = ?", (seq,)).fetchone()[0]
        conn.execute("UPDATE head SET seq = ?, hash = ?", (seq, digest))


def append_forged(db: Path) -> None:
    """Copy the last record as a new one after it, chained correctly, anchor left alone."""
    with closing(connect(db)) as conn:
        seq, digest = conn.execute("SELECT seq, hash FROM records ORDER BY seq DESC").fetchone()
        data = body(conn, seq)
        data["seq"], data["prev_hash"] = seq + 1, digest
        text = canonical_json(data)
        row = conn.execute("SELECT time, kind, decision_id FROM records WHERE seq = ?", (seq,))
        time, kind, decision = row.fetchone()
        conn.execute(
            "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
            (seq + 1, time, kind, decision, digest, text, hash_body(text)),
        )


def rewitness(data_dir: Path, key: bytes | None = None) -> None:
    """Rewrite audit.head to the log's present head, as an attacker without the key can."""
    with closing(sqlite3.connect(data_dir / "audit.db")) as conn:
        seq, digest = conn.execute("SELECT seq, hash FROM head").fetchone()
        at = conn.execute("SELECT time FROM records WHERE seq = ?", (seq,)).fetchone()[0]
    head_file.write(data_dir, seq, digest, datetime.fromisoformat(at), key)
