"""The inbox keeps where an answer came from; an inbox made before chat-ops gains the column."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from agent.approvals.inbox import DB_NAME, Inbox
from tools.actions import ScaleWorkload

OLD_SCHEMA = """
CREATE TABLE pending (
    decision_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, actions TEXT NOT NULL,
    indexes TEXT NOT NULL, messages TEXT NOT NULL, status TEXT NOT NULL, answered_by TEXT,
    reason TEXT NOT NULL DEFAULT '', answered_at TEXT
);
INSERT INTO pending VALUES ('d-000000000001', '2026-03-02T08:00:00+00:00', '[]', '[]', '[]',
                            'approved', 'homelab-owner', '', '2026-03-02T08:01:00+00:00');
"""


def test_an_old_inbox_gains_the_channel_column(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.executescript(OLD_SCHEMA)
    inbox = Inbox.open(tmp_path)
    try:
        old = inbox.get("d-000000000001")
        assert old is not None and old.channel == "cli" and old.status == "approved"
        action = ScaleWorkload(workload="burst-llm", replicas=1, reason="queue")
        at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        inbox.ensure_waiting("d-000000000002", [action], [0], ["needs an owner"], at)
        answered = inbox.answer("d-000000000002", approved=True, by="U0OWNER", reason="",
                                at=at, channel="slack")  # fmt: skip
        assert answered.channel == "slack" and answered.answered_by == "U0OWNER"
    finally:
        inbox.close()
