"""A 0-byte or corrupt inbox.db, chatops.db or checkpoint DB is refused with a clear line, never
taken for a fresh one; a simulated cluster saved before the log's last record is brought up to
its time.

Before: a 0-byte inbox.db silently dropped every pending request (SQLite took it for an empty
database), and a cluster restored older than the log let a record's time go backwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.approvals.inbox import Inbox
from agent.audit import AuditLog
from agent.chatops.store import ChatopsStore
from agent.daemon.runtime import Runtime
from agent.support import dbfile
from agent.support.datadir import CHECKPOINT_DB
from agent.support.dbfile import DamagedFile
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from policies.loader import load_default_policy
from tests.loop.conftest import open_runtime

ROOT = Path(__file__).resolve().parents[2]


def _used(data_dir: Path) -> None:
    runtime = open_runtime(data_dir, Scenario())
    try:
        runtime.tick(15.0)
    finally:
        runtime.close()


def _run_once(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", "--ticks", "1", "--speed", "0",
         "--data-dir", str(data_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "STEWARD_TEST_CRASH_AT": ""},
    )  # fmt: skip


def test_a_zero_byte_inbox_is_refused(data_dir: Path) -> None:
    _used(data_dir)
    (data_dir / "inbox.db").write_bytes(b"")

    with pytest.raises(DamagedFile, match="the approval inbox is an empty \\(0-byte\\) file"):
        Inbox.open(data_dir)


def test_a_damaged_chatops_store_is_refused_and_a_fresh_one_made(data_dir: Path) -> None:
    ChatopsStore.open(data_dir).close()  # none there: a fresh one
    (data_dir / "chatops.db").write_bytes(b"")

    with pytest.raises(DamagedFile, match="the chat-ops store is an empty \\(0-byte\\) file"):
        ChatopsStore.open(data_dir)

    (data_dir / "chatops.db").write_bytes(b"this is not a database" * 200)
    with pytest.raises(DamagedFile, match="the chat-ops store is damaged"):
        ChatopsStore.open(data_dir)


def test_a_corrupt_checkpoint_db_is_refused_by_run_in_one_line(data_dir: Path) -> None:
    _used(data_dir)
    (data_dir / CHECKPOINT_DB).write_bytes(b"this is not a database" * 200)
    for leftover in ("-wal", "-shm"):
        (data_dir / f"{CHECKPOINT_DB}{leftover}").unlink(missing_ok=True)

    done = _run_once(data_dir)

    assert done.returncode == 2
    assert "the checkpoint DB is damaged" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "text",
    ['{"tick": 3, "memo', '{"memory": {}}', '{"tick": 1, "memory": {"last_busy": 7}}', "[]"],
    ids=["truncated", "no-tick", "wrong-shape", "not-an-object"],
)
def test_a_damaged_loop_memory_is_refused_by_run_in_one_line(data_dir: Path, text: str) -> None:
    _used(data_dir)
    (data_dir / "loop.json").write_text(text)

    done = _run_once(data_dir)

    assert done.returncode == 2
    assert "loop.json: the loop's memory is damaged" in done.stderr
    assert "move it away" in done.stderr and "Traceback" not in done.stderr
    assert (data_dir / "loop.json").read_text() == text  # nothing is overwritten


def test_a_zero_byte_inbox_makes_pending_fail_in_one_line(data_dir: Path) -> None:
    _used(data_dir)
    (data_dir / "inbox.db").write_bytes(b"")

    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "pending", "--data-dir", str(data_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert done.returncode == 2 and "empty (0-byte)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_cluster_saved_before_the_log_is_brought_up_to_its_time(data_dir: Path) -> None:
    busy = Scenario(demand=(PoissonDemand(target="burst-llm", rate_per_min=30),))
    sim = SimCluster.open(data_dir, busy)
    stale = (data_dir / "sim.json").read_bytes()
    policy = load_default_policy()
    with Runtime.open(data_dir, sim, policy) as runtime:
        runtime.start()
        for _ in range(4):
            runtime.tick(15.0)
        last = runtime.ctx.audit.last_time()
    (data_dir / "sim.json").write_bytes(stale)  # as if killed before the periodic save

    older = SimCluster.open(data_dir)
    assert last is not None and older.now < last
    with Runtime.open(data_dir, older, policy) as runtime:
        assert older.now >= last
        runtime.start()
        runtime.tick(15.0)
    with AuditLog.open(data_dir, readonly=True) as log:
        times = [r.time for r in log.records()]
        assert times == sorted(times) and log.verify().ok


def test_a_start_killed_before_its_first_write_leaves_no_empty_file(tmp_path: Path) -> None:
    """SQLite creates a database file empty and writes its first page with the first write: a
    process killed in between left a 0-byte checkpoint DB, which the next start refused as
    damaged (found by the chaos soak). A fresh one appears whole, its header written."""
    for what, path in (("the checkpoint DB", tmp_path / CHECKPOINT_DB), ("x", tmp_path / "x.db")):
        dbfile.connect(path, what).close()  # opened, then gone before any write of its own
        assert path.stat().st_size > 0
        dbfile.connect(path, what).close()  # the next start opens it
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([CHECKPOINT_DB, "x.db"])
