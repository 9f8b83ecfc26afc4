"""The data dir's durable memory that its log is signed: from which seq on, and with which key.

A signed log could be laundered without the key: delete a record, rewrite the chain, strip every
MAC and audit.head's MAC, and the log looked like one that was never signed — the next run then
signed new records on top and `audit verify` called the unsigned ones "written before the key".
So the first time a writer opens a data dir with STEWARD_AUDIT_KEY set, it records that fact
outside the log, in `audit.signing` (written aside, fsynced, renamed, directory fsynced): the seq
from which every record is signed and a check value of the key (an HMAC of a fixed text, never
the key). From then on, for the writer at start and for `audit verify` alike:

- every record from that seq on must carry a valid MAC, and so must the anchor row and audit.head
  (`hmac_missing` names the first one without, `bad_hmac` the first one whose MAC is wrong);
- the key given must be the one recorded (a wrong key is named as such, MACs stripped or not);
- a writer without a key is refused.

A data dir signed before this file existed gets it from its first signed record. What the file
cannot do: an attacker who deletes it as well, together with every MAC, leaves a log that looks
never signed; an outside witness of the head (`audit verify --witness`) still finds the rewrite.
"""

from __future__ import annotations

import hmac
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent.audit.chain import mac_of
from agent.audit.errors import LogRefused
from agent.support.datadir import read_model_file, replace_file

SIGNING_FILE = "audit.signing"
_CHECK_TEXT = "steward audit key check"


class Signing(BaseModel):
    """What audit.signing holds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    since_seq: int = Field(ge=1)
    """Every record from this seq on is signed."""
    key_check: str
    """HMAC-SHA256 of a fixed text under the key: tells a wrong key without a signed record."""
    at: datetime


def key_check(key: bytes) -> str:
    return mac_of(key, _CHECK_TEXT)


def path_of(data_dir: Path) -> Path:
    return data_dir / SIGNING_FILE


def read(data_dir: Path) -> Signing | None:
    """The recorded fact, None when the data dir has never seen a key; LogRefused when the
    file is there but not readable as one (a directory, garbage)."""
    return read_model_file(
        path_of(data_dir),
        Signing,
        "the record that this data dir's log is signed",
        "restore it from a backup (it is never rebuilt from the log)",
        LogRefused,
    )


def write(data_dir: Path, since_seq: int, key: bytes, at: datetime) -> Signing:
    signing = Signing(since_seq=since_seq, key_check=key_check(key), at=at)
    replace_file(path_of(data_dir), signing.model_dump_json().encode())
    return signing


def key_problem(signing: Signing, key: bytes | None, key_env: str) -> str | None:
    """Why `key` cannot be used on a data dir that recorded `signing` (None: it can)."""
    if key is None:
        return (
            f"this data dir's log is signed from seq {signing.since_seq} on ({SIGNING_FILE}) "
            f"but {key_env} is not set: set it to the key the log was written with"
        )
    if not hmac.compare_digest(signing.key_check, key_check(key)):
        return (
            f"{key_env} is not the key this data dir's log is signed with ({SIGNING_FILE} "
            "holds another key's check value): set the key the log was written with"
        )
    return None


def signed_from(conn: sqlite3.Connection) -> int | None:
    """The first seq that carries a MAC (None: no record does)."""
    row = conn.execute("SELECT min(seq) FROM records WHERE mac IS NOT NULL").fetchone()
    return int(row[0]) if row and row[0] is not None else None


def first_unsigned(conn: sqlite3.Connection, since: int, key: bytes) -> tuple[int, str] | None:
    """The first record from `since` on whose MAC is missing or wrong, and which it is."""
    rows = conn.execute("SELECT seq, hash, mac FROM records WHERE seq >= ? ORDER BY seq", (since,))
    for seq, digest, mac in rows:
        if mac is None:
            return int(seq), "hmac_missing"
        if not hmac.compare_digest(mac, mac_of(key, digest)):
            return int(seq), "bad_hmac"
    return None


def on_open(
    data_dir: Path,
    db: Path,
    conn: sqlite3.Connection,
    key: bytes | None,
    *,
    key_env: str,
    clock: Callable[[], datetime],
) -> Signing | None:
    """The writer's check as it opens the log: in a data dir that has seen a key, refuse a
    missing or wrong key, a record from the signed seq on without a valid MAC and an anchor
    without one — never sign over them; record the fact the first time a key is used.
    Returns what is recorded (None: the log is not signed)."""
    signing = read(data_dir)
    if signing is None:
        if key is None:
            return None
        head = conn.execute("SELECT seq FROM head WHERE id = 1").fetchone()
        since = signed_from(conn) or (int(head[0]) + 1 if head else 1)
        signing = write(data_dir, since, key, clock())
    problem = key_problem(signing, key, key_env)
    if problem is not None:
        raise LogRefused(f"{db}: {problem}")
    assert key is not None
    bad = first_unsigned(conn, signing.since_seq, key)
    if bad is not None:
        seq, kind = bad
        what = "carries no HMAC" if kind == "hmac_missing" else "carries an HMAC of another key"
        raise LogRefused(
            f"{db}: record seq {seq} {what} ({kind}), but every record of this log from seq "
            f"{signing.since_seq} on is signed ({SIGNING_FILE}): it was rewritten without the "
            "key (its MACs stripped or forged to launder it). The writer does not sign over it: "
            "keep the data dir as evidence, run `steward audit verify`, and restore audit.db "
            "and audit.head from a backup"
        )
    head = conn.execute("SELECT seq, mac FROM head WHERE id = 1").fetchone()
    if head is not None and int(head[0]) >= signing.since_seq and head[1] is None:
        raise LogRefused(
            f"{db}: the log's anchor (head row, seq {head[0]}) carries no HMAC (hmac_missing), "
            f"but its records are signed from seq {signing.since_seq} on ({SIGNING_FILE}): "
            "its MACs were stripped. The writer does not sign over it: keep the data dir as "
            "evidence, run `steward audit verify`, and restore the log from a backup"
        )
    return signing
