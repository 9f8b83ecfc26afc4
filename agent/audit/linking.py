"""Linking records onto the chain: the rows and head one append writes, inside its transaction.

The caller (AuditLog.append_batch) holds the writer lock and has begun the transaction; this
module only stamps, hashes, signs and inserts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from agent.audit.chain import body_for, hash_body, mac_of, time_text
from agent.audit.records import GENESIS_HASH, SCHEMA_VERSION, Payload, Record, decision_of
from agent.audit.verify import anchor_mac


def insert(
    conn: sqlite3.Connection, payloads: Sequence[Payload], key: bytes | None, now: datetime
) -> list[Record]:
    """Chain `payloads` onto the log's head inside the caller's open transaction."""
    head = conn.execute("SELECT seq, hash FROM head WHERE id = 1").fetchone()
    seq, prev = (head[0], head[1]) if head else (0, GENESIS_HASH)
    last = conn.execute("SELECT time FROM records WHERE seq = ?", (seq,)).fetchone()
    # Record times never go backwards, whatever the clock does (a simulated cluster
    # restored from an older save): a record is stamped no earlier than the one before.
    floor = datetime.fromisoformat(last[0]) if last else None
    # One transaction, one time: every record of a batch is stamped when it is written.
    at = datetime.fromisoformat(time_text(now))
    at = max(at, floor) if floor is not None else at
    stamp = time_text(at)
    written: list[Record] = []
    rows: list[tuple[object, ...]] = []
    for payload in payloads:
        seq += 1
        body = body_for(seq, at, payload, prev)
        digest = hash_body(body)
        mac = mac_of(key, digest) if key else None
        decision = decision_of(payload)
        rows.append((seq, stamp, payload.kind, decision, prev, body, digest, mac))
        written.append(
            Record.model_construct(  # built from checked parts; validated when read back
                schema_version=SCHEMA_VERSION,
                seq=seq,
                time=at,
                kind=payload.kind,
                decision_id=decision,
                prev_hash=prev,
                hash=digest,
                mac=mac,
                payload=payload,
            )
        )
        prev = digest
    conn.executemany(
        "INSERT INTO records (seq, time, kind, decision_id, prev_hash, body, hash, mac) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    head_mac = anchor_mac(key, seq, prev) if key else None
    conn.execute(
        "INSERT INTO head (id, seq, hash, mac) VALUES (1, ?, ?, ?) ON CONFLICT(id) DO UPDATE "
        "SET seq = excluded.seq, hash = excluded.hash, mac = excluded.mac",
        (seq, prev, head_mac),
    )
    return written
