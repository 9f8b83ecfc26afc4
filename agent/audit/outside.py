"""A head of the log kept outside the data dir — on /metrics, in notices, in a file or at a URL
the operator names — and the check that the log was not rolled back past it.

audit.db and audit.head live side by side: an attacker (or a careless restore) who puts back an
older copy of both leaves a log that is consistent with itself and with its witness, with or
without the key — every record, MAC and anchor is genuine, just old. Only a head remembered
somewhere the data dir's writer cannot reach shows it: `steward audit verify --witness FILE`
(the witness file the daemon appends one JSON line to each time the head moves; its last line
is read) or `--witness SEQ:HASH` (a head noted from /metrics or a notice) proves that the log
still holds that record with that hash. A log that ends before it was rolled back (or cut); one
whose record there hashes differently was replaced. With the key, a witness line's MAC is
checked too, so a forged line is named rather than trusted.
"""

from __future__ import annotations

import hmac
import re
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from agent.audit.head_file import HeadRecord, head_mac
from tools.errors import InvalidInput

TAIL_BYTES = 64 * 1024
"""How much of a witness file's end is read: its last line is the head it vouches for."""
_SEQ_HASH = re.compile(r"(?P<seq>[0-9]{1,18}):(?P<hash>[0-9a-f]{64})")


class OutsideHead:
    """A head witnessed outside the data dir: seq, hash, and where it was read from."""

    def __init__(self, seq: int, digest: str, source: str, witness: HeadRecord | None = None):
        self.seq = seq
        self.hash = digest
        self.source = source
        self.witness = witness
        """The whole line (time and MAC) when read from a witness file."""


def parse(value: str) -> OutsideHead:
    """`SEQ:HASH`, or the path of a witness file; InvalidInput naming what is wrong."""
    matched = _SEQ_HASH.fullmatch(value.strip())
    if matched is not None:
        return OutsideHead(int(matched["seq"]), matched["hash"], f"--witness {value.strip()}")
    path = Path(value)
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read()
    except OSError as exc:
        raise InvalidInput(
            f"--witness {value}: neither SEQ:HASH (seq, a colon, the 64 hex digits of the "
            f"hash) nor a readable witness file ({exc.strerror})"
        ) from exc
    lines = [line for line in tail.splitlines() if line.strip()]
    if not lines:
        raise InvalidInput(f"{path}: the witness file is empty: no head to check the log against")
    try:
        seen = HeadRecord.model_validate_json(lines[-1])
    except ValidationError as exc:
        raise InvalidInput(
            f"{path}: its last line is not a witnessed head ({exc.error_count()} problem(s)); "
            'each line is {"seq": …, "hash": …, "time": …, "mac": …} as the daemon writes it'
        ) from exc
    return OutsideHead(seen.seq, seen.hash, f"the witness file {path}", seen)


def problem(
    outside: OutsideHead, last_seq: int | None, hash_at: str | None, key: bytes | None
) -> tuple[Literal["bad_hmac", "rolled_back", "replaced"], str] | None:
    """(kind, message) of what the outside head says is wrong with a log ending at `last_seq`
    whose record at its seq hashes to `hash_at`; None when the log holds it."""
    said = f"{outside.source} says seq {outside.seq} (hash {outside.hash[:12]}…) was written"
    line = outside.witness
    if line is not None and line.mac is not None and key is not None:
        expected = head_mac(key, line.seq, line.hash, line.time)
        if not hmac.compare_digest(line.mac, expected):
            return "bad_hmac", f"{said}, but its HMAC does not match this key (a forged line?)"
    if last_seq is None or last_seq < outside.seq:
        holds = "holds no record" if last_seq is None else f"ends at seq {last_seq}"
        return (
            "rolled_back",
            f"{said}, but the log {holds}: it was rolled back (audit.db and audit.head put "
            "back from an older copy?) or cut; restore the latest copy",
        )
    if hash_at != outside.hash:
        return (
            "replaced",
            f"{said}, but the log's record seq {outside.seq} hashes to "
            f"{(hash_at or 'none')[:12]}…: the log was replaced or rewritten since",
        )
    return None
