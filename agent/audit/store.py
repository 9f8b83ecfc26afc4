"""`AuditLog`: the decision log of one data dir — one writer, any number of readers.

The log lives at DATA_DIR/audit.db (tables and locking in db.py). An append returns only after
its transaction is committed and fsynced, so an intent is on disk before the action it describes
runs; readers (the CLI) read consistent snapshots while the daemon writes. Only one writer at a
time, so that a second agent can neither interleave decisions nor reconcile the first one's
in-flight intents.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from agent.audit import head_file, signing
from agent.audit.chain import body_for, hash_body, mac_of, time_text
from agent.audit.db import (
    SCHEMA,
    check_integrity,
    check_layout,
    connect,
    release,
    take_writer_lock,
)
from agent.audit.errors import AuditError
from agent.audit.outside import OutsideHead
from agent.audit.queries import (
    SELECT_RECORD,
    ExecutedAction,
    executed_since,
    export_stream,
    find,
    record_of,
    records_of,
    unfinished,
    where,
)
from agent.audit.records import (
    GENESIS_HASH,
    SCHEMA_VERSION,
    ApprovalRecord,
    Intent,
    Interrupted,
    Kind,
    Outcome,
    Payload,
    Record,
    decision_of,
)
from agent.audit.verify import (
    VerifyReport,
    against_outside,
    anchor_mac,
    check,
    check_key,
    read_witness,
    snapshot,
    witnessed,
)
from agent.support.durable import fsync_dir
from policies.history import Executed, History

HISTORY_WINDOW = timedelta(hours=24)
"""How far back the policy looks for what was done (the longest cooldown or budget it has)."""

DB_NAME = "audit.db"
KEY_ENV = "STEWARD_AUDIT_KEY"
INTERRUPTED_REASON = "the process stopped between intent and outcome; re-observe before acting"


def key_from_env() -> bytes | None:
    """The HMAC key from STEWARD_AUDIT_KEY, or None when it is unset or empty."""
    value = os.environ.get(KEY_ENV, "")
    return value.encode() if value else None


def utc_now() -> datetime:
    return datetime.now(UTC)


class AuditLog:
    """The hash-chained decision log of one data dir. Open with `AuditLog.open`."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        key: bytes | None,
        clock: Callable[[], datetime],
        lock_fd: int | None,
    ) -> None:
        self.path = path
        self._conn = conn
        self._key = key
        self._clock = clock
        self._lock_fd = lock_fd
        self._mutex = threading.Lock()

    @classmethod
    def open(
        cls,
        data_dir: Path,
        key: bytes | None = None,
        *,
        readonly: bool = False,
        clock: Callable[[], datetime] = utc_now,
    ) -> AuditLog:
        """Open DATA_DIR/audit.db: as its one writer (default) or as a reader.

        `key` signs (writer) or checks (reader) HMACs; None takes STEWARD_AUDIT_KEY if set.
        """
        key = key if key is not None else key_from_env()
        path = data_dir / DB_NAME
        state = "missing" if not path.is_file() else "empty (0 bytes)"
        if (not path.is_file() or path.stat().st_size == 0) and (
            history := head_file.history_in(data_dir)
        ):
            # Loss is evidence, never a fresh start: refuse before touching anything.
            raise head_file.LogLost(head_file.lost_message(data_dir, path, state, history))
        if readonly:
            if not path.is_file() or path.stat().st_size == 0:
                raise AuditError(
                    f"no decision log at {path}: nothing was recorded there yet; pass the "
                    "--data-dir the agent runs with"
                )
            reader = cls(path, connect(path, readonly=True), key, clock, None)
            try:
                check_integrity(reader._conn, path, full=True)
                check_layout(reader._conn, path, create=False)
            except BaseException:
                reader.close()
                raise
            return reader
        data_dir.mkdir(parents=True, exist_ok=True)
        lock_fd = take_writer_lock(path)
        try:
            created = not path.exists()
            conn = connect(path, readonly=False)
        except BaseException:
            release(lock_fd)
            raise
        log = cls(path, conn, key, clock, lock_fd)
        try:
            if not created:
                check_integrity(conn, path)
            conn.executescript(SCHEMA)
            if created:
                fsync_dir(data_dir)
            check_layout(conn, path, create=True)
            check_key(conn, path, key, KEY_ENV)
            signed = signing.on_open(data_dir, path, conn, key, key_env=KEY_ENV, clock=clock)
            head_file.on_open(data_dir, path, conn, key, signed.since_seq if signed else None)
        except BaseException:
            log.close()
            raise
        return log

    def close(self) -> None:
        with self._mutex:
            self._conn.close()
            if self._lock_fd is not None:
                release(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def signed(self) -> bool:
        """Whether this handle signs (or checks) records with an HMAC key."""
        return self._key is not None

    # Writing ---------------------------------------------------------------------------------

    def append(self, payload: Payload) -> Record:
        """Append one record; it is committed and fsynced when this returns."""
        return self.append_batch([payload])[0]

    def append_batch(
        self,
        payloads: Sequence[Payload],
        precondition: Callable[[sqlite3.Connection], None] | None = None,
    ) -> list[Record]:
        """Append records in one transaction (one fsync); all are written or none."""
        if self._lock_fd is None:
            raise AuditError(f"{self.path} was opened read-only; open it as the writer to append")
        if not payloads:
            return []
        with self._mutex:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                if precondition is not None:
                    precondition(conn)
                written = _link(conn, payloads, self._key, self._clock())
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            last = written[-1]
            # After the commit: a crash in between leaves the witness one append behind (a
            # prefix, which verifies), never ahead of the log.
            head_file.write(self.path.parent, last.seq, last.hash, last.time, self._key)
        return written

    def write_intent(self, intent: Intent) -> Record:
        """Record what a decision saw and proposed — durable before any of its actions runs."""

        def fresh(conn: sqlite3.Connection) -> None:
            if find(conn, intent.decision_id, "intent", "plan"):
                raise AuditError(
                    f"decision {intent.decision_id} already has an intent in {self.path}; "
                    "use a new decision id for a new decision"
                )

        return self.append_batch([intent], fresh)[0]

    def write_outcome(self, outcome: Outcome) -> Record:
        """Record what a decision's actions did; exactly once, after its intent."""

        def open_intent(conn: sqlite3.Connection) -> None:
            intent = self._open_intent(conn, outcome.decision_id, "an outcome")
            for result in outcome.results:
                if result.index >= len(intent.proposals):
                    raise AuditError(
                        f"outcome for decision {outcome.decision_id} reports action "
                        f"{result.index}, but its intent proposed {len(intent.proposals)}"
                    )

        return self.append_batch([outcome], open_intent)[0]

    def write_approval(self, approval: ApprovalRecord) -> Record:
        """Record a human's answer to a proposal that waited for approval."""

        def pending(conn: sqlite3.Connection) -> None:
            intent = self._open_intent(conn, approval.decision_id, "an approval")
            if approval.action_index not in intent.approvals_pending:
                raise AuditError(
                    f"action {approval.action_index} of decision {approval.decision_id} does "
                    f"not wait for approval (pending: {list(intent.approvals_pending)})"
                )

        return self.append_batch([approval], pending)[0]

    def _open_intent(self, conn: sqlite3.Connection, decision_id: str, what: str) -> Intent:
        rows = find(conn, decision_id, "intent", "outcome", "interrupted")
        intents = [r.payload for r in rows if isinstance(r.payload, Intent)]
        if not intents:
            raise AuditError(
                f"{what} for decision {decision_id}, but {self.path} holds no intent for it; "
                "write_intent() must come first"
            )
        closed = [r for r in rows if r.kind in ("outcome", "interrupted")]
        if closed:
            raise AuditError(
                f"{what} for decision {decision_id}, but it was closed as {closed[0].kind} at "
                f"seq {closed[0].seq}; re-observe and record a new decision"
            )
        return intents[0]

    def head(self) -> tuple[int, str] | None:
        """The last seq and its hash (None while the log is empty), for /metrics."""
        with self._mutex:
            row = self._conn.execute("SELECT seq, hash FROM head WHERE id = 1").fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def last_time(self) -> datetime | None:
        """The time of the last record (None while the log is empty)."""
        with self._mutex:
            row = self._conn.execute(
                "SELECT r.time FROM records r JOIN head h ON r.seq = h.seq"
            ).fetchone()
        return datetime.fromisoformat(row[0]) if row else None

    # Reconciliation --------------------------------------------------------------------------

    def unfinished_intents(self) -> list[Record]:
        """Intents with neither an outcome nor an interrupted record, oldest first."""
        with self._mutex:
            return unfinished(self._conn)

    def reconcile(self, keep: Collection[str] = (), reason: str = INTERRUPTED_REASON) -> list[str]:
        """Close every unfinished intent as interrupted; return their decision ids.

        Call it at start, before anything else, and re-observe before acting on any of them.
        `keep` names decisions that are legitimately paused (waiting at an approval interrupt
        that the checkpointer will resume); they stay open.
        """
        closing = [
            Interrupted(decision_id=r.payload.decision_id, intent_seq=r.seq, reason=reason)
            for r in self.unfinished_intents()
            if isinstance(r.payload, Intent) and r.payload.decision_id not in keep
        ]
        if closing:
            self.append_batch(closing)
        return [c.decision_id for c in closing]

    # Reading ---------------------------------------------------------------------------------

    def records(
        self,
        since: datetime | None = None,
        kind: Kind | None = None,
        *,
        decision_id: str | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Records in seq order, filtered; `limit` keeps the last N that match."""
        clause, args = where(since, kind, decision_id)
        last = " LIMIT ?" if limit is not None else ""
        sql = f"{SELECT_RECORD}{clause} ORDER BY seq DESC{last}"
        with self._mutex:
            rows = self._conn.execute(sql, (*args, limit) if limit is not None else args)
            found = records_of(rows.fetchall())
        found.reverse()
        return found

    def record(self, seq: int) -> Record | None:
        with self._mutex:
            row = self._conn.execute(f"{SELECT_RECORD} WHERE seq = ?", (seq,)).fetchone()
        return record_of(row) if row else None

    def decision(self, decision_id: str) -> list[Record]:
        """Every record of one decision (intent, approvals, fallback, outcome …) in order."""
        return self.records(decision_id=decision_id)

    def export(self) -> Iterator[dict[str, Any]]:
        """Every record as one flat JSON object (explanations.export_row), streamed in seq order."""
        return export_stream(self.path)

    def history(
        self,
        at: datetime,
        *,
        last_busy: Mapping[str, datetime] | None = None,
        watching_since: datetime | None = None,
    ) -> History:
        """What the policy counts at `at`: the actions carried out ok in the HISTORY_WINDOW
        before it (cooldowns, budgets), with the loop's idleness facts when given. The one
        reading of the log every judge uses — the loop, an answer, a rotation asked, explain."""
        done = self.executed_actions(at - HISTORY_WINDOW)
        return History(
            executed=tuple(Executed(at=e.at, action=e.action) for e in done if e.ok),
            last_busy=dict(last_busy or {}),
            watching_since=watching_since,
        )

    def executed_actions(self, since: datetime) -> list[ExecutedAction]:
        """Actions the backend carried out since `since` (for policies.history.History)."""
        with self._mutex:
            return executed_since(self._conn, since)

    def checkpoint(self) -> None:
        """Copy the WAL into the database file, off the append path (call it between ticks)."""
        with self._mutex:
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def outside_head(self) -> head_file.HeadRecord | None:
        """The head as a witness outside the data dir keeps it: seq, hash, time and (with the
        key) its MAC — what audit.head holds, for /metrics, notices and the witness file."""
        with self._mutex:
            row = self._conn.execute(
                "SELECT h.seq, h.hash, r.time FROM head h JOIN records r ON r.seq = h.seq"
            ).fetchone()
        if row is None:
            return None
        seq, digest, at = int(row[0]), str(row[1]), datetime.fromisoformat(row[2])
        mac = head_file.head_mac(self._key, seq, digest, at) if self._key else None
        return head_file.HeadRecord(seq=seq, hash=digest, time=at, mac=mac)

    def verify(self, outside: OutsideHead | None = None) -> VerifyReport:
        """Check the whole log (one consistent snapshot, safe while the writer appends), and
        against a head kept `outside` the data dir when one is given."""
        seen = read_witness(self.path.parent)
        try:
            signed: signing.Signing | str | None = signing.read(self.path.parent)
        except AuditError as exc:
            signed = str(exc)
        since = signed.since_seq if isinstance(signed, signing.Signing) else None
        with self._mutex:
            rows, head = snapshot(self._conn)
        report = check(rows, head, self._key, since)
        report = witnessed(report, rows, seen, self._key, signed)
        return report if outside is None else against_outside(report, rows, outside, self._key)


def _link(
    conn: sqlite3.Connection, payloads: Sequence[Payload], key: bytes | None, now: datetime
) -> list[Record]:
    """Chain `payloads` onto the log's head inside the caller's open transaction: stamp, hash,
    sign and insert their rows and the new head (the caller holds the writer lock)."""
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
