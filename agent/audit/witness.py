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
import os
import sqlite3
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.audit.chain import mac_of, time_text
from agent.audit.errors import AuditError

HEAD_FILE = "audit.head"
HISTORY_FILES = ("checkpoints.db", "inbox.db", "modes/journal.jsonl", "loop.json")
"""Files only a data dir that ran an agent has (their owners' names; a test keeps them in step)."""


class LogLost(AuditError):
    """The decision log is missing, empty or cut in a data dir whose history says it was not."""


class Witness(BaseModel):
    """What audit.head holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=1)
    hash: str
    time: datetime
    mac: str | None = None

    def short(self) -> str:
        return f"seq {self.seq} (hash {self.hash[:12]}…, {time_text(self.time)})"


def witness_mac(key: bytes, seq: int, digest: str, at: datetime) -> str:
    return mac_of(key, f"witness:{seq}:{digest}:{time_text(at)}")


def path_of(data_dir: Path) -> Path:
    return data_dir / HEAD_FILE


def read(data_dir: Path) -> Witness | None:
    """The witnessed head, None when there is none; AuditError when the file is unreadable."""
    path = path_of(data_dir)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return Witness.model_validate_json(text)
    except ValidationError as exc:
        raise AuditError(
            f"{path}: the log's head held outside it is unreadable ({exc.error_count()} "
            "problem(s)); it was damaged or edited: restore it, or keep the data dir as evidence"
        ) from exc


def write(data_dir: Path, seq: int, digest: str, at: datetime, key: bytes | None) -> None:
    """Witness the head: durable (fsynced) before this returns, replaced atomically."""
    mac = witness_mac(key, seq, digest, at) if key else None
    data = Witness(seq=seq, hash=digest, time=at, mac=mac).model_dump_json().encode()
    path = path_of(data_dir)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def mac_problem(witness: Witness, key: bytes | None) -> str | None:
    """Why the witness's MAC does not hold under `key` (None: it holds, or there is no key)."""
    if key is None:
        return None
    if witness.mac is None:
        return f"{HEAD_FILE} carries no HMAC although a key is set (written without the key?)"
    expected = witness_mac(key, witness.seq, witness.hash, witness.time)
    if not hmac.compare_digest(witness.mac, expected):
        return f"the HMAC of {HEAD_FILE} does not match this key (forged or rewritten?)"
    return None


def against(witness: Witness, last_seq: int | None, hash_at: str | None) -> str | None:
    """What is wrong with a log ending at `last_seq` whose record at the witnessed seq hashes
    to `hash_at` (None: no such record), given the witness; None when it is consistent."""
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


def history_in(data_dir: Path) -> list[str]:
    """The files in `data_dir` that only an agent that ran there leaves."""
    found = [HEAD_FILE] if path_of(data_dir).exists() else []
    for name in HISTORY_FILES:
        path = data_dir / name
        if path.is_file() and path.stat().st_size > 0 and _ran(path):
            found.append(name)
    return found


def on_open(data_dir: Path, db: Path, conn: sqlite3.Connection, key: bytes | None) -> None:
    """The writer's check as it opens the log: refuse a log the history says was lost, cut or
    replaced; bring a witness left one append behind by a crash (or none yet) up to date."""
    head = conn.execute("SELECT seq, hash, mac FROM head WHERE id = 1").fetchone()
    if head is None:
        history = history_in(data_dir)
        if history:
            raise LogLost(lost_message(data_dir, db, "empty", history))
        return
    seq, digest = int(head[0]), str(head[1])
    seen = read(data_dir)
    if seen is not None:
        row = conn.execute("SELECT hash FROM records WHERE seq = ?", (seen.seq,)).fetchone()
        # A log unsigned so far (anchor row without a MAC) has an unsigned witness too.
        unsigned_so_far = seen.mac is None and head[2] is None
        problem = against(seen, seq, row[0] if row else None) or (
            None if unsigned_so_far else mac_problem(seen, key)
        )
        if problem:
            raise LogLost(
                f"{db}: {problem}. The writer does not append to it: run `steward audit "
                "verify`, and restore the log from a backup"
            )
        if seen.seq == seq:
            return
    at = conn.execute("SELECT time FROM records WHERE seq = ?", (seq,)).fetchone()
    if at is not None:
        write(data_dir, seq, digest, datetime.fromisoformat(at[0]), key)
