"""The hash chain: the one spelling of a record that is hashed, its digest and MAC, and back.

Each record's body is canonical JSON (sorted keys, no whitespace, UTF-8, no NaN) of its
envelope and payload, including the previous record's hash; its digest is SHA-256 of that text
and its MAC, when the log has a key, an HMAC-SHA256 of the digest. The store writes bodies with
`body_for`, the checks (agent.audit.verify) recompute `hash_body` and `mac_of`, and readers turn
a stored body back into a typed `Record` with `parse_body`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime

from agent.audit.records import PAYLOAD_ADAPTER, SCHEMA_VERSION, Payload, Record, decision_of


def canonical_json(obj: object) -> str:
    """The one JSON spelling hashed: sorted keys, no whitespace, UTF-8, no NaN."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def time_text(at: datetime) -> str:
    """A timestamp as stored: UTC, microseconds, so that text order is time order."""
    if at.tzinfo is None:
        raise ValueError(f"timestamp {at.isoformat()} has no time zone; pass an aware datetime")
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def body_for(seq: int, at: datetime, payload: Payload, prev_hash: str) -> str:
    """The canonical JSON body of a record: exactly the text its hash covers."""
    return canonical_json(
        {
            "v": SCHEMA_VERSION,
            "seq": seq,
            "time": time_text(at),
            "kind": payload.kind,
            "decision_id": decision_of(payload),
            "prev_hash": prev_hash,
            "payload": payload.model_dump(mode="json"),
        }
    )


def hash_body(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def mac_of(key: bytes, digest: str) -> str:
    """HMAC-SHA256 of a record's hash (the hash already binds its content and chain)."""
    return hmac.digest(key, digest.encode(), "sha256").hex()


def parse_body(body: str, digest: str, mac: str | None) -> Record:
    """A stored body back as a typed record; raises ValueError for a foreign or broken body."""
    data = json.loads(body)
    version = data.get("v")
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"record seq {data.get('seq')} has schema version {version}; this steward reads "
            f"version {SCHEMA_VERSION} — upgrade steward to read it"
        )
    return Record(
        schema_version=version,
        seq=data["seq"],
        time=datetime.fromisoformat(data["time"]),
        kind=data["kind"],
        decision_id=data["decision_id"],
        prev_hash=data["prev_hash"],
        hash=digest,
        mac=mac,
        payload=PAYLOAD_ADAPTER.validate_python(data["payload"]),
    )
