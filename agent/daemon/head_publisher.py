"""The decision log's head published outside the data dir, where its writer cannot take it back.

A rollback of audit.db and audit.head together to an older copy is consistent with itself, key
or not (agent/audit/outside.py): only a head remembered elsewhere shows it. So the head — seq,
hash, record time and, with STEWARD_AUDIT_KEY, its MAC — goes out three ways: /metrics
(`steward_audit_head`, read at scrape time), every notice (`details.audit_head`), and, when the
operator names one in steward.yaml (`audit.witness`), a witness file that gets one JSON line
appended (and fsynced) each time the head moved, or an http(s) URL the same line is POSTed to.
Publishing never stops the loop: a witness that cannot be written is logged as an error.
"""

from __future__ import annotations

import os
import urllib.request
from collections.abc import Callable
from pathlib import Path

import structlog

from agent.audit.head_file import HeadRecord
from agent.support.notices import Notice, Notifier

log = structlog.get_logger("steward.witness")
POST_TIMEOUT_S = 5.0

Head = Callable[[], HeadRecord | None]


def head_details(head: HeadRecord | None) -> dict[str, str | int | None]:
    if head is None:
        return {}
    return {"seq": head.seq, "hash": head.hash, "time": head.time.isoformat(), "mac": head.mac}


class HeadPublisher:
    """Appends the head to the operator's witness (file or URL) when it moved."""

    def __init__(self, head: Head, target: str | None) -> None:
        self.head = head
        self.target = target
        self._published: int | None = None

    def publish(self) -> None:
        if self.target is None:
            return
        current = self.head()
        if current is None or current.seq == self._published:
            return
        line = current.model_dump_json() + "\n"
        try:
            if self.target.startswith(("http://", "https://")):
                request = urllib.request.Request(
                    self.target,
                    data=line.encode(),
                    headers={"Content-Type": "application/json"},
                    method="POST",
                )
                with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S):
                    pass
            else:
                _append(Path(self.target), line)
        except (OSError, ValueError) as exc:
            log.error("witness not written", target=self.target, seq=current.seq, error=str(exc))
            return
        self._published = current.seq


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


class HeadStamped:
    """A notifier whose every notice carries the log's head (`details.audit_head`)."""

    def __init__(self, inner: Notifier, head: Head) -> None:
        self.inner = inner
        self.head = head

    def notify(self, notice: Notice) -> None:
        details = {**notice.details, "audit_head": head_details(self.head())}
        self.inner.notify(notice.model_copy(update={"details": details}))
