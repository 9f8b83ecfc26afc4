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
- unsupported: a record written by a newer schema than this steward reads.

Without a key, someone who rewrites the whole chain and its anchor is not detectable; with
STEWARD_AUDIT_KEY set, that needs the key.
"""

from __future__ import annotations

import hmac
import json
from typing import Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from agent.audit.records import GENESIS_HASH, SCHEMA_VERSION, hash_body, mac_of

ProblemKind = Literal[
    "edited",
    "missing",
    "reordered",
    "truncated",
    "unanchored",
    "bad_hmac",
    "hmac_missing",
    "unsupported",
]
MAX_LISTED = 50


class Row(NamedTuple):
    """One stored record, as read from the table."""

    pos: int
    time: str
    kind: str
    decision_id: str | None
    body: str
    hash: str
    mac: str | None


class Anchor(NamedTuple):
    """The head of the log: last seq and hash written (and their MAC when signed)."""

    seq: int
    hash: str
    mac: str | None


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


def _check_mac(found: _Findings, key: bytes, seq: int, mac: str | None, expected: str) -> None:
    if mac is None:
        found.add(seq, "hmac_missing", "a key is set but this record carries no HMAC")
    elif not hmac.compare_digest(mac, expected):
        found.add(seq, "bad_hmac", "its HMAC does not match (rewritten without the key?)")


def _check_row(found: _Findings, row: Row) -> dict[str, object] | None:
    """The record's own consistency; returns its body when it can be trusted for chaining."""
    try:
        data = json.loads(row.body)
    except ValueError:
        found.add(row.pos, "edited", "its body is not valid JSON any more")
        return None
    computed = hash_body(row.body)
    if computed != row.hash:
        found.add(
            row.pos,
            "edited",
            f"its content does not match its hash (stored {_short(row.hash)}, "
            f"content hashes to {_short(computed)})",
        )
        return None
    if data.get("v") != SCHEMA_VERSION:
        found.add(row.pos, "unsupported", f"schema version {data.get('v')}; upgrade steward")
        return None
    if data.get("seq") != row.pos:
        found.add(row.pos, "reordered", f"this place holds record seq {data.get('seq')}")
        return None
    for column, stored in (("time", row.time), ("kind", row.kind)):
        if data.get(column) != stored:
            found.add(
                row.pos,
                "edited",
                f"the {column} column says {stored!r} but the hashed body says "
                f"{data.get(column)!r}",
            )
            return None
    if data.get("decision_id") != row.decision_id:
        found.add(row.pos, "edited", "the decision_id column disagrees with the hashed body")
        return None
    return dict(data)


def _check_tail(found: _Findings, rows: list[Row], anchor: Anchor | None) -> None:
    last = rows[-1] if rows else None
    if anchor is None:
        if last is not None:
            found.add(last.pos, "truncated", "the anchor (head) row is gone; the tail may be cut")
        return
    if last is None:
        found.add(None, "truncated", f"no records left, but the anchor says seq {anchor.seq}")
    elif last.pos < anchor.seq:
        found.add(
            last.pos,
            "truncated",
            f"the log ends here but its anchor says seq {anchor.seq} was written "
            f"({anchor.seq - last.pos} record(s) cut from the tail)",
        )
    elif last.pos > anchor.seq:
        found.add(
            anchor.seq + 1,
            "unanchored",
            f"records after the anchor (seq {anchor.seq}) were not written by the log's writer",
        )
    elif last.hash != anchor.hash:
        found.add(
            last.pos,
            "edited",
            f"the last record was rewritten: the anchor holds hash {_short(anchor.hash)}, "
            f"the record {_short(last.hash)}",
        )


def check(rows: list[Row], anchor: Anchor | None, key: bytes | None) -> VerifyReport:
    """Verify the stored rows (in stored order) against each other, the anchor and the key."""
    found = _Findings()
    prev_seq, prev_hash, prev_ok = 0, GENESIS_HASH, True
    signed = 0
    for row in rows:
        signed += row.mac is not None
        data = _check_row(found, row)
        # Records written before a key was first set carry no MAC and need none: the signed
        # anchor covers them through the chain. After the first signed record, every one must.
        if key is not None and signed:
            _check_mac(found, key, row.pos, row.mac, mac_of(key, row.hash))
        if data is not None and prev_ok:
            if row.pos > prev_seq + 1:
                first = prev_seq + 1
                gone = (
                    f"record {first} is"
                    if first == row.pos - 1
                    else f"records {first}..{row.pos - 1} are"
                )
                found.add(row.pos, "missing", f"{gone} gone (seq {row.pos} follows {prev_seq})")
            elif data.get("prev_hash") != prev_hash:
                culprit = prev_seq if prev_seq else row.pos
                found.add(
                    culprit,
                    "edited",
                    f"record seq {row.pos} chains to {_short(str(data.get('prev_hash')))} but "
                    f"this record hashes to {_short(prev_hash)}: rewritten with a new hash",
                )
        prev_seq, prev_hash, prev_ok = row.pos, row.hash, data is not None
    _check_tail(found, rows, anchor)
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
        last_seq=rows[-1].pos if rows else None,
        anchor_seq=anchor.seq if anchor else None,
        hmac_checked=key is not None,
        signed_records=signed,
        problems=tuple(listed),
        problems_total=found.total,
    )
