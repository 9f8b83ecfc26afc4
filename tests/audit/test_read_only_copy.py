"""`steward audit verify` on a read-only copy of a log (an archive, evidence on a read-only mount):
it reads, never asks to write. The copy is checked as a user without write permission — a user
namespace makes this process an unprivileged owner of files it cannot write."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import AuditLog, Startup
from tests.audit.builders import FakeClock, intent, outcome

ROOT = Path(__file__).resolve().parents[2]


def _unprivileged(*args: str) -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) to drop the privilege of writing read-only files")
    probe = subprocess.run([unshare, "--user", "--map-user=65534", "true"], check=False)
    if probe.returncode != 0:
        pytest.skip("user namespaces are not available here")
    return [unshare, "--user", "--map-user=65534", *args]


def test_verify_reads_a_read_only_copy(tmp_path: Path) -> None:
    live = tmp_path / "live"
    with AuditLog.open(live, clock=FakeClock()) as log:
        log.append(Startup(pid=4242, host="gx10-a", version="0.1.0"))
        log.write_intent(intent("d-1"))
        log.write_outcome(outcome("d-1"))
    copy = tmp_path / "copy"
    shutil.copytree(live, copy)
    for path in [copy, *copy.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        done = subprocess.run(
            _unprivileged(
                sys.executable, "-m", "agent.cli", "audit", "verify", "--data-dir", str(copy)
            ),
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("ok: 3 record(s), chain intact up to seq 3")
        assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in live.iterdir())
    finally:
        copy.chmod(0o755)
