"""Transcripts of the model's deliberations and answers, stored once, named by their digest.

A deliberation's transcript (every message sent and received, tool calls and their results) can
be tens of kilobytes: it stays out of the hash chain, in DATA_DIR/transcripts/<sha256>.json, and
the audit record that it belongs to carries the SHA-256 of its canonical JSON. The chain covers
the digest, so an edited transcript no longer matches its record (`load` refuses it); the same
transcript written twice is one file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from agent.audit.errors import AuditError

DIR_NAME = "transcripts"


def canonical(messages: list[dict[str, Any]]) -> bytes:
    return json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest_of(messages: list[dict[str, Any]]) -> str:
    return hashlib.sha256(canonical(messages)).hexdigest()


def store(data_dir: Path, messages: list[dict[str, Any]]) -> str:
    """Write the transcript (once) and return its digest."""
    body = canonical(messages)
    digest = hashlib.sha256(body).hexdigest()
    folder = data_dir / DIR_NAME
    path = folder / f"{digest}.json"
    if path.is_file():
        return digest
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{digest}.{os.getpid()}.part"
    with partial.open("wb") as out:
        out.write(body)
        out.flush()
        os.fsync(out.fileno())
    partial.replace(path)
    return digest


def load(data_dir: Path, digest: str) -> list[dict[str, Any]]:
    """The transcript named `digest`; AuditError if it is missing or does not match."""
    path = data_dir / DIR_NAME / f"{digest}.json"
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise AuditError(
            f"{path}: transcript {digest[:12]} cannot be read: {exc.strerror}"
        ) from exc
    if hashlib.sha256(body).hexdigest() != digest:
        raise AuditError(f"{path}: the transcript does not match its digest: it was edited")
    messages: list[dict[str, Any]] = json.loads(body)
    return messages
