"""The log's head held outside the log file (DATA_DIR/audit.head), and what its absence means.

The anchor row inside audit.db changes atomically with the records, so it catches a cut tail —
unless the whole file goes: `: > audit.db`, a deleted file or a replaced one takes its anchor
with it, and a fresh log then verified "ok: 1 record(s)". So after every append the writer also
writes the head (seq, hash, record time; an HMAC with STEWARD_AUDIT_KEY) to `audit.head`, a
separate file, and `verify` checks the log against it: a log that ends before the witnessed seq
was cut, deleted or emptied; one whose record at that seq hashes differently was replaced.

The file is written after the commit (temporary file, fsync, rename), so a crash can leave it
one append behind the log, never ahead: a witness older than the log is a prefix and passes,
and the writer brings it up to date when it opens. Deleting audit.head as well is caught by the
other history a used data dir holds (`history_in`: checkpoints, inbox, rotation journal, the
loop's memory): the writer refuses a missing or empty log next to any of them. The simulated
cluster's sim.json is not on that list: it is written when a data dir is created, before the
log, and the sim-only commands move it without an agent.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent.audit.chain import mac_of, time_text
from agent.audit.errors import AuditError, LogRefused
from agent.audit.records import GENESIS_HASH
from agent.support.datadir import read_model_file, replace_file

HEAD_FILE = "audit.head"
HISTORY_FILES = ("checkpoints.db", "inbox.db", "modes/journal.jsonl", "loop.json")
"""Files only a data dir that ran an agent has (their owners' names; a test keeps them in step)."""


class LogLost(LogRefused):
    """The decision log is missing, empty or cut in a data dir whose history says it was not."""


class HeadRecord(BaseModel):
    """What audit.head holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=0)
    """0: a fresh log, witnessed before its first record."""
    hash: str
    time: datetime
    mac: str | None = None

    def short(self) -> str:
        return f"seq {self.seq} (hash {self.hash[:12]}…, {time_text(self.time)})"


def head_mac(key: bytes, seq: int, digest: str, at: datetime) -> str:
    return mac_of(key, f"witness:{seq}:{digest}:{time_text(at)}")


def path_of(data_dir: Path) -> Path:
    return data_dir / HEAD_FILE


def read(data_dir: Path) -> HeadRecord | None:
    """The witnessed head, None when there is none; AuditError when the file is unreadable."""
    return read_model_file(
        path_of(data_dir),
        HeadRecord,
        "the log's head held outside it",
        "it was replaced or damaged: restore it from a backup, or keep the data dir as evidence "
        "and move it away",
        LogRefused,
    )


def write(data_dir: Path, seq: int, digest: str, at: datetime, key: bytes | None) -> None:
    """HeadRecord the head: durable (fsynced) before this returns, replaced atomically."""
    mac = head_mac(key, seq, digest, at) if key else None
    data = HeadRecord(seq=seq, hash=digest, time=at, mac=mac).model_dump_json().encode()
    replace_file(path_of(data_dir), data)


def mac_problem(witness: HeadRecord, key: bytes | None) -> str | None:
    """Why the witness's MAC does not hold under `key` (None: it holds, or there is no key)."""
    if key is None:
        return None
    if witness.mac is None:
        return f"{HEAD_FILE} carries no HMAC although a key is set (written without the key?)"
    expected = head_mac(key, witness.seq, witness.hash, witness.time)
    if not hmac.compare_digest(witness.mac, expected):
        return f"the HMAC of {HEAD_FILE} does not match this key (forged or rewritten?)"
    return None


def against(witness: HeadRecord, last_seq: int | None, hash_at: str | None) -> str | None:
    """What is wrong with a log ending at `last_seq` whose record at the witnessed seq hashes
    to `hash_at` (None: no such record), given the witness; None when it is consistent."""
    if witness.seq == 0:
        return None
    if last_seq is None or last_seq < witness.seq:
        holds = "holds no record" if last_seq is None else f"ends at seq {last_seq}"
        gone = witness.seq - (last_seq or 0)
        return (
            f"the head held outside the log ({HEAD_FILE}) says {witness.short()} was written, "
            f"but the log {holds}: {gone} record(s) are missing (cut, deleted or replaced)"
        )
    if hash_at is not None and hash_at != witness.hash:
        return (
            f"the log was replaced: its record seq {witness.seq} hashes to {hash_at[:12]}…, "
            f"but the head held outside it ({HEAD_FILE}) says {witness.short()}"
        )
    return None


def lost_message(data_dir: Path, db: Path, state: str, history: list[str]) -> str:
    """The refusal of a missing or empty log in a used data dir, naming what shows it ran."""
    witness = read(data_dir)
    said = f"; {HEAD_FILE} says {witness.short()} was written" if witness else ""
    return (
        f"the decision log {db} is {state}, but {data_dir} has history ({', '.join(history)})"
        f"{said}: the log was lost or replaced. Restore audit.db from a backup; to start "
        "afresh, move the whole data dir away (never just the log)"
    )


def _has_rows(path: Path) -> bool:
    """Whether the SQLite file at `path` holds any row (unreadable counts: something was there)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return True
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return any(conn.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() for t in tables)
    except sqlite3.Error:
        return True
    finally:
        conn.close()


def _ran(path: Path) -> bool:
    """Whether a history file shows an agent's work (not just a file opened once)."""
    if path.suffix == ".db":
        return _has_rows(path)
    if path.suffix == ".json":
        try:
            return bool(json.loads(path.read_text()).get("tick"))
        except (ValueError, AttributeError):
            return True
    return True


def _witnessed_records(data_dir: Path) -> bool:
    """Whether audit.head says records were written (a damaged one counts: something was)."""
    try:
        seen = read(data_dir)
    except AuditError:
        return True
    return seen is not None and seen.seq > 0


def history_in(data_dir: Path) -> list[str]:
    """The files in `data_dir` that only an agent that ran there leaves."""
    found = [HEAD_FILE] if _witnessed_records(data_dir) else []
    for name in HISTORY_FILES:
        path = data_dir / name
        if path.is_file() and path.stat().st_size > 0 and _ran(path):
            found.append(name)
    return found


def on_open(
    data_dir: Path, db: Path, conn: sqlite3.Connection, key: bytes | None, signed: int | None
) -> None:
    """The writer's check as it opens the log: refuse a log the history says was lost, cut or
    replaced, a log whose witness is gone, and — in a data dir whose log is signed from seq
    `signed` on — a witness of a later seq without a MAC; bring a witness left one append
    behind by a crash up to date.

    A fresh log is witnessed at seq 0 before its first append, so that from then on a log with
    records and no audit.head is never a crash, always a deletion."""
    head = conn.execute("SELECT seq, hash, mac FROM head WHERE id = 1").fetchone()
    seen = read(data_dir)
    if head is None:
        history = history_in(data_dir)
        if history:
            raise LogLost(lost_message(data_dir, db, "empty", history))
        if seen is None:
            write(data_dir, 0, GENESIS_HASH, datetime.now(UTC), key)
        return
    seq, digest = int(head[0]), str(head[1])
    if seen is None:
        raise LogRefused(
            f"{db}: the log holds records up to seq {seq}, but {path_of(data_dir)}, the head "
            "held outside it, is gone (deleted?): a cut, rolled back or replaced log could not "
            "be told apart, and the writer does not witness it afresh. Restore audit.head "
            "from a backup (`steward audit verify --witness` checks the log against a head you "
            "kept elsewhere), or move the whole data dir away to start afresh"
        )
    row = conn.execute("SELECT hash FROM records WHERE seq = ?", (seen.seq,)).fetchone()
    # A log unsigned so far (no signing recorded) has an unsigned witness too.
    problem = against(seen, seq, row[0] if row else None) or (
        mac_problem(seen, key)
        if (signed is not None and seen.seq >= signed) or seen.mac is not None
        else None
    )
    if problem:
        raise LogRefused(
            f"{db}: {problem}. The writer does not append to it: run `steward audit "
            "verify`, and restore the log from a backup"
        )
    if seen.seq == seq:
        return
    at = conn.execute("SELECT time FROM records WHERE seq = ?", (seq,)).fetchone()
    if at is not None:
        write(data_dir, seq, digest, datetime.fromisoformat(at[0]), key)
