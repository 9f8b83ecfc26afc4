"""One writer, any number of readers: the CLI reads consistent snapshots while the daemon writes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import AuditError, AuditLog, Startup
from tests.audit.processes import ROOT, read_line, writer


def test_a_reader_sees_a_valid_growing_log_while_another_process_writes(
    tmp_path: Path,
) -> None:
    with writer(tmp_path, "burst") as proc:
        read_line(proc)
        with AuditLog.open(tmp_path, readonly=True) as reader:
            seen: list[int] = []
            while len(seen) < 8 or seen[-1] < 100:
                report = reader.verify()
                assert report.ok, report.summary()
                seen.append(report.records)
        assert proc.poll() is None
    assert seen == sorted(seen) and seen[0] < seen[-1]


def test_the_cli_verifies_while_the_daemon_writes(tmp_path: Path) -> None:
    with writer(tmp_path, "burst") as proc:
        read_line(proc)
        done = subprocess.run(
            [sys.executable, "-m", "agent.cli", "audit", "verify", "--data-dir", str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.poll() is None
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: ")


def test_a_second_writer_is_refused_while_the_first_holds_the_log(tmp_path: Path) -> None:
    with writer(tmp_path, "hold") as proc:
        assert read_line(proc) == "holding"
        with pytest.raises(AuditError, match=f"another process \\(pid {proc.pid}\\) is writing"):
            AuditLog.open(tmp_path)
    with AuditLog.open(tmp_path) as log:
        assert log.verify().ok


def test_a_reader_cannot_append(tmp_path: Path) -> None:
    AuditLog.open(tmp_path).close()
    with (
        AuditLog.open(tmp_path, readonly=True) as reader,
        pytest.raises(AuditError, match="opened read-only; open it as the writer"),
    ):
        reader.append(Startup(pid=1, host="test", version="0.1.0"))
