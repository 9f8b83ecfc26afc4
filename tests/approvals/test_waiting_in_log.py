"""A waiting decision is in the decision log from the moment it waits, and the log is what the
inbox is rebuilt from: a wiped inbox gets its requests back; a request whose checkpoint is gone
is closed as lost (and its intent as interrupted), never reported "resumed"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.approvals.inbox import Inbox
from agent.audit import Intent, Interrupted
from agent.support.dbfile import DamagedFile
from tests.approvals.conftest import Recorder, cli
from tests.approvals.test_late_approval import wait_for_approval
from tests.loop.conftest import APPROVE_BURST, open_runtime
from tests.loop.test_approval import SPIKE


def _wipe(path: Path) -> None:
    """Empty a SQLite database the way `: > file` does, its WAL and index files gone too."""
    path.write_bytes(b"")
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_audit_explain_answers_for_a_pending_decision(data_dir: Path) -> None:
    recorder = Recorder()
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        runtime.ctx.notifier = recorder
        decision = wait_for_approval(runtime)
        kinds = [r.kind for r in runtime.ctx.audit.decision(decision)]
    assert kinds == ["intent"]
    (notice,) = [n for n in recorder.notices if n.kind == "needs_approval"]
    assert notice.decision_id == decision and "owners (homelab-owner)" in notice.text
    code, out = cli("audit", "explain", decision, "--data-dir", str(data_dir), "--json")
    assert code == 0, out
    explanation = json.loads(out)
    assert explanation["status"] == "waiting for approval"
    (action,) = explanation["actions"]
    assert action["verdict"] == "needs_approval" and action["approvers"] == ["owners"]
    assert action["rule_ids"] == ["approval.burst_needs_a_human"]
    code, out = cli("audit", "explain", decision, "--data-dir", str(data_dir))
    assert "no approval recorded (may approve: owners)" in out
    assert "it waits for approval" in out


def test_a_wiped_inbox_is_rebuilt_from_the_log(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        decision = wait_for_approval(runtime)
    _wipe(data_dir / "inbox.db")
    # An emptied inbox is refused, never taken for a fresh one (agent/support/dbfile.py) ...
    with pytest.raises(DamagedFile, match="move it away"):
        open_runtime(data_dir, SPIKE, APPROVE_BURST)
    # ... and once moved away, as the message says, start() rebuilds it from the log.
    (data_dir / "inbox.db").rename(data_dir / "inbox.db.empty")
    with open_runtime(data_dir, SPIKE, APPROVE_BURST):
        pass  # start() squares the inbox with the log
    code, out = cli("pending", "--json", "--data-dir", str(data_dir))
    assert code == 0 and [p["decision_id"] for p in json.loads(out)] == [decision]
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(APPROVE_BURST),
    )  # fmt: skip
    assert code == 0, out
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        assert runtime.tick(15.0).resumed == (decision,)
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 1


def test_a_request_whose_checkpoint_is_gone_is_lost_not_resumed(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        decision = wait_for_approval(runtime)
    for name in ("checkpoints.db", "checkpoints.db-wal", "checkpoints.db-shm"):
        (data_dir / name).unlink(missing_ok=True)  # deleted, as `rm` would
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        records = runtime.ctx.audit.decision(decision)
    assert [type(r.payload) for r in records] == [Intent, Interrupted]
    inbox = Inbox.open(data_dir)
    try:
        entry = inbox.get(decision)
    finally:
        inbox.close()
    assert entry is not None and entry.status == "lost"
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(APPROVE_BURST),
    )  # fmt: skip
    assert code == 1 and "can no longer be resumed" in out and "resumes" not in out


def test_approving_a_decision_whose_checkpoint_is_gone_says_so_at_once(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        decision = wait_for_approval(runtime)
    for name in ("checkpoints.db", "checkpoints.db-wal", "checkpoints.db-shm"):
        (data_dir / name).unlink(missing_ok=True)  # and no agent has started since
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(APPROVE_BURST),
    )  # fmt: skip
    assert code == 1 and "checkpoint is gone" in out and "resumes" not in out
    inbox = Inbox.open(data_dir)
    try:
        entry = inbox.get(decision)
    finally:
        inbox.close()
    assert entry is not None and entry.status == "lost"
