"""Checking a decision log: every record against its hash, its MAC, its place and its neighbours.

`check(rows, anchor, key)` is pure: it reads the stored rows (in stored order) and the anchor —
the last seq and hash, written in the same transaction as every append — and names what is wrong:

- edited: a record's bytes no longer match its hash, its indexed columns disagree with the hashed
  body, or a record was rewritten with a recomputed hash (the next record's prev_hash disagrees);
- missing: a gap in the seq numbers;
- reordered: a record sits at another record's place;
- truncated: the log ends before the seq its anchor says was written (or the anchor is gone);
- unanchored: records after the anchor, i.e. appended by something other than the log's writer;
- bad_hmac / hmac_missing: with a key, a MAC that does not match, or none where one must be
  (on the anchor, and on every record from the first signed one on; records from before a key
  was set are covered by the signed anchor through the chain);
- unsupported: a record written by a newer schema than this steward reads;
- against the head held outside the log (audit.head, witness.py): truncated when the log ends
  before the witnessed seq (a deleted, emptied or cut file), replaced when the record there
  hashes differently, unwitnessed when records exist but the witness is gone, bad_hmac /
  hmac_missing for its MAC.

Without a key, someone who rewrites the whole chain and its anchor is not detectable; with
STEWARD_AUDIT_KEY set, that needs the key.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from agent.audit import head_file, signing
from agent.audit.chain import hash_body, mac_of
from agent.audit.errors import AuditError, LogRefused
from agent.audit.outside import OutsideHead
from agent.audit.outside import problem as outside_problem
from agent.audit.records import GENESIS_HASH, SCHEMA_VERSION

ProblemKind = Literal[
    "edited",
    "missing",
    "reordered",
    "truncated",
    "unanchored",
    "bad_hmac",
    "hmac_missing",
    "unsupported",
    "replaced",
    "unwitnessed",
    "time_backwards",
    "rolled_back",
]
MAX_LISTED = 50


Row = tuple[int, str, str, str | None, str, str, str, str | None]
"""One stored record as read: seq (its place), time, kind, decision_id, prev_hash, body, hash, mac.

A plain tuple, straight from sqlite3: verifying 100,000 records must not build 100,000 objects."""


class Anchor(NamedTuple):
    """The head of the log: last seq and hash written (and their MAC when signed)."""

    seq: int
    hash: str
    mac: str | None


def snapshot(conn: sqlite3.Connection) -> tuple[list[Row], Anchor | None]:
    """Every row of the log and its head anchor, read in one transaction: one consistent
    snapshot, safe while the writer appends."""
    conn.execute("BEGIN")
    try:
        rows = conn.execute(
            "SELECT seq, time, kind, decision_id, prev_hash, body, hash, mac "
            "FROM records ORDER BY seq"
        ).fetchall()
        head = conn.execute("SELECT seq, hash, mac FROM head WHERE id = 1").fetchone()
    finally:
        conn.execute("COMMIT")
    return rows, Anchor._make(head) if head else None


def check_key(conn: sqlite3.Connection, path: Path, key: bytes | None, key_env: str) -> None:
    """Refuse a signed log opened without its key (`key_env` unset), or with another one."""
    head = conn.execute("SELECT seq, hash, mac FROM head WHERE id = 1").fetchone()
    if head is None or head[2] is None:
        return
    if key is None:
        raise LogRefused(
            f"the decision log {path} is signed (HMAC) but {key_env} is not set; "
            "set it to the key the log was written with"
        )
    if head[2] != anchor_mac(key, head[0], head[1]):
        raise LogRefused(
            f"{key_env} does not match the key {path} was signed with (or its anchor "
            "was tampered with: run `steward audit verify`)"
        )


def anchor_mac(key: bytes, seq: int, digest: str) -> str:
    return mac_of(key, f"head:{seq}:{digest}")


class Problem(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int | None
    problem: ProblemKind
    message: str


class VerifyReport(BaseModel):
    """The verdict on a whole log; `problems` lists the first MAX_LISTED, first one first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    records: int
    last_seq: int | None
    anchor_seq: int | None
    hmac_checked: bool
    signed_records: int
    problems: tuple[Problem, ...] = ()
    problems_total: int = 0

    @property
    def first(self) -> Problem | None:
        return self.problems[0] if self.problems else None

    def summary(self) -> str:
        if self.first is not None:
            more = self.problems_total - 1
            tail = f" (and {more} more problem(s))" if more else ""
            return self.first.message + tail
        signed = (
            "every record's HMAC checked"
            if self.hmac_checked
            else (
                f"{self.signed_records} record(s) carry an HMAC but no key was given: "
                "set STEWARD_AUDIT_KEY to check them"
                if self.signed_records
                else "not signed (set STEWARD_AUDIT_KEY to sign new records)"
            )
        )
        return f"ok: {self.records} record(s), chain intact up to seq {self.last_seq}; {signed}"


class _Findings:
    def __init__(self) -> None:
        self.listed: list[Problem] = []
        self.total = 0

    def add(self, seq: int | None, kind: ProblemKind, detail: str) -> None:
        self.total += 1
        if len(self.listed) < MAX_LISTED:
            where = f"record seq {seq}" if seq is not None else "the log"
            self.listed.append(
                Problem(seq=seq, problem=kind, message=f"{where}: {kind} — {detail}")
            )


def _short(digest: str | None) -> str:
    return (digest or "none")[:12] + "…"


_SIGNED = f"but this data dir signs every record from seq {{since}} on ({signing.SIGNING_FILE})"
_UNSIGNED = "this record carries no HMAC, " + _SIGNED + ": its MACs were stripped"


def _check_mac(found: _Findings, key: bytes, seq: int, mac: str | None, expected: str) -> None:
    if mac is None:
        found.add(seq, "hmac_missing", "a key is set but this record carries no HMAC")
    elif not hmac.compare_digest(mac, expected):
        found.add(seq, "bad_hmac", "its HMAC does not match (rewritten without the key?)")


def _envelope_matches(row: Row) -> bool:
    """The fast path: do the indexed columns spell exactly the hashed body's envelope?

    The body is canonical JSON with sorted keys, so the envelope fields sit around the payload in
    a fixed order; comparing its ends avoids parsing 100,000 bodies.
    """
    pos, time, kind, decision, prev, body, _, _ = row
    start = '{"decision_id":null,' if decision is None else '{"decision_id":"' + decision + '",'
    end = f',"prev_hash":"{prev}","seq":{pos},"time":"{time}","v":{SCHEMA_VERSION}}}'
    return body.startswith(start + '"kind":"' + kind + '","payload":') and body.endswith(end)


def _diagnose(found: _Findings, row: Row) -> bool:
    """The slow path, for a row the fast path doubts: name what is wrong, if anything."""
    pos, time, kind, decision, prev, body, digest, _ = row
    try:
        data = json.loads(body)
    except ValueError:
        found.add(pos, "edited", "its body is not valid JSON any more")
        return False
    computed = hash_body(body)
    if computed != digest:
        found.add(
            pos,
            "edited",
            f"its content does not match its hash (stored {_short(digest)}, "
            f"content hashes to {_short(computed)})",
        )
        return False
    if data.get("v") != SCHEMA_VERSION:
        found.add(pos, "unsupported", f"schema version {data.get('v')}; upgrade steward")
        return False
    if data.get("seq") != pos:
        found.add(pos, "reordered", f"this place holds record seq {data.get('seq')}")
        return False
    for column, stored in (
        ("time", time),
        ("kind", kind),
        ("decision_id", decision),
        ("prev_hash", prev),
    ):
        if data.get(column) != stored:
            found.add(
                pos,
                "edited",
                f"the {column} column says {stored!r} but the hashed body says "
                f"{data.get(column)!r}",
            )
            return False
    return True


def _check_tail(found: _Findings, rows: Sequence[Row], anchor: Anchor | None) -> None:
    if not rows:
        if anchor is not None:
            found.add(None, "truncated", f"no records left, but the anchor says seq {anchor.seq}")
        return
    last_pos, last_hash = rows[-1][0], rows[-1][6]
    if anchor is None:
        found.add(last_pos, "truncated", "the anchor (head) row is gone; the tail may be cut")
    elif last_pos < anchor.seq:
        found.add(
            last_pos,
            "truncated",
            f"the log ends here but its anchor says seq {anchor.seq} was written "
            f"({anchor.seq - last_pos} record(s) cut from the tail)",
        )
    elif last_pos > anchor.seq:
        found.add(
            anchor.seq + 1,
            "unanchored",
            f"records after the anchor (seq {anchor.seq}) were not written by the log's writer",
        )
    elif last_hash != anchor.hash:
        found.add(
            last_pos,
            "edited",
            f"the last record was rewritten: the anchor holds hash {_short(anchor.hash)}, "
            f"the record {_short(last_hash)}",
        )


def check(
    rows: Sequence[Row], anchor: Anchor | None, key: bytes | None, since: int | None = None
) -> VerifyReport:
    """Verify the stored rows (in stored order) against each other, the anchor and the key;
    `since`: the seq from which the data dir recorded that every record is signed
    (audit.signing) — from there a missing MAC is found with or without the key."""
    found = _Findings()
    prev_seq, prev_hash, prev_ok = 0, GENESIS_HASH, True
    prev_time = ""
    signed = 0
    for row in rows:
        pos, time, _, _, chained_to, body, digest, mac = row
        if time < prev_time:  # stored as UTC text with microseconds: text order is time order
            found.add(pos, "time_backwards", f"its time {time} is before the previous {prev_time}")
        prev_time = max(prev_time, time)
        signed += mac is not None
        ok = (hash_body(body) == digest and _envelope_matches(row)) or _diagnose(found, row)
        # Records written before a key was first set carry no MAC and need none: the signed
        # anchor covers them through the chain. After the first signed record, every one must.
        must_sign = bool(signed) or (since is not None and pos >= since)
        if key is not None and must_sign:
            _check_mac(found, key, pos, mac, mac_of(key, digest))
        elif must_sign and mac is None:
            found.add(pos, "hmac_missing", _UNSIGNED.format(since=since))
        if ok and prev_ok:
            if pos > prev_seq + 1:
                first = prev_seq + 1
                gone = (
                    f"record {first} is" if first == pos - 1 else f"records {first}..{pos - 1} are"
                )
                found.add(pos, "missing", f"{gone} gone (seq {pos} follows {prev_seq})")
            elif chained_to != prev_hash:
                found.add(
                    prev_seq or pos,
                    "edited",
                    f"record seq {pos} chains to {_short(chained_to)} but this record hashes "
                    f"to {_short(prev_hash)}: rewritten with a new hash",
                )
        prev_seq, prev_hash, prev_ok = pos, digest, ok
    _check_tail(found, rows, anchor)
    unsigned_anchor = anchor if anchor is not None and anchor.mac is None else None
    if key is None and since is not None and unsigned_anchor and unsigned_anchor.seq >= since:
        found.add(
            unsigned_anchor.seq,
            "hmac_missing",
            "the log's anchor carries no HMAC, " + _SIGNED.format(since=since),
        )
    if key is not None and anchor is not None:
        if anchor.mac is None:
            found.add(
                anchor.seq,
                "hmac_missing",
                "a key is set but the log's anchor carries no HMAC (written without a key, "
                "or its MACs were stripped)",
            )
        elif not hmac.compare_digest(anchor.mac, anchor_mac(key, anchor.seq, anchor.hash)):
            found.add(anchor.seq, "bad_hmac", "the anchor's HMAC does not match this key")
    listed = sorted(found.listed, key=lambda p: p.seq if p.seq is not None else 1 << 62)
    return VerifyReport(
        ok=found.total == 0,
        records=len(rows),
        last_seq=rows[-1][0] if rows else None,
        anchor_seq=anchor.seq if anchor else None,
        hmac_checked=key is not None,
        signed_records=signed,
        problems=tuple(listed),
        problems_total=found.total,
    )


def read_witness(data_dir: Path) -> head_file.HeadRecord | str | None:
    """The witnessed head, or why it cannot be read. Read it BEFORE the log's snapshot: the
    writer updates it after each commit, so it then never runs ahead of what the snapshot holds.
    """
    try:
        return head_file.read(data_dir)
    except AuditError as exc:
        return str(exc)


def witnessed(
    report: VerifyReport,
    rows: Sequence[Row],
    seen: head_file.HeadRecord | str | None,
    key: bytes | None,
    signed: signing.Signing | str | None = None,
) -> VerifyReport:
    """`report` with what the head held outside the log (audit.head) says about `rows`, and
    what the data dir's record of signing (audit.signing; a string: why it is unreadable)
    says about the key."""
    problems: list[Problem] = []
    if isinstance(signed, str):
        problems.append(Problem(seq=None, problem="hmac_missing", message=f"the log: {signed}"))
        signed = None
    elif signed is not None and key is not None:
        wrong = signing.key_problem(signed, key, "STEWARD_AUDIT_KEY")
        if wrong is not None:
            problems.append(Problem(seq=None, problem="bad_hmac", message=f"the log: {wrong}"))
    if isinstance(seen, str):
        message = f"the log: unwitnessed — {seen}"
        problems.append(Problem(seq=None, problem="unwitnessed", message=message))
        seen = None
    elif seen is None and rows:
        problems.append(
            Problem(
                seq=None,
                problem="unwitnessed",
                message=f"the log: unwitnessed — {head_file.HEAD_FILE}, the head held outside "
                "the log, is gone (deleted?): a cut or replaced log could not be told apart",
            )
        )
    if seen is not None:
        last = rows[-1][0] if rows else None
        at_seq = next((r[6] for r in reversed(rows) if r[0] == seen.seq), None)
        problem = head_file.against(seen, last, at_seq)
        if problem is not None:
            kind: ProblemKind = "truncated" if last is None or last < seen.seq else "replaced"
            message = f"the log: {kind} — {problem}"
            problems.append(Problem(seq=seen.seq, problem=kind, message=message))
        # A log written unsigned until now has an unsigned witness too, as its anchor row.
        unsigned_so_far = seen.mac is None and report.signed_records == 0 and signed is None
        bad_mac = None if unsigned_so_far else head_file.mac_problem(seen, key)
        if signed is not None and key is None and seen.mac is None and seen.seq >= signed.since_seq:
            bad_mac = f"{head_file.HEAD_FILE} carries no HMAC, but this data dir's log is signed"
        if bad_mac is not None:
            kind = "hmac_missing" if seen.mac is None else "bad_hmac"
            message = f"the log: {kind} — {bad_mac}"
            problems.append(Problem(seq=seen.seq, problem=kind, message=message))
    if not problems:
        return report
    return report.model_copy(
        update={
            "ok": False,
            "problems": (*report.problems, *problems)[:MAX_LISTED],
            "problems_total": report.problems_total + len(problems),
        }
    )


def against_outside(
    report: VerifyReport, rows: Sequence[Row], outside: OutsideHead, key: bytes | None
) -> VerifyReport:
    """`report` with what a head kept outside the data dir says about `rows`."""
    last = rows[-1][0] if rows else None
    at_seq = next((r[6] for r in reversed(rows) if r[0] == outside.seq), None)
    found = outside_problem(outside, last, at_seq, key)
    if found is None:
        return report
    kind, message = found
    problem = Problem(seq=outside.seq, problem=kind, message=f"the log: {kind} — {message}")
    return report.model_copy(
        update={
            "ok": False,
            "problems": (problem, *report.problems)[:MAX_LISTED],
            "problems_total": report.problems_total + 1,
        }
    )
