"""Starting and stopping real writer processes (tests.audit.writer) from a test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def writer(data_dir: Path, mode: str) -> Iterator[subprocess.Popen[str]]:
    """A writer process; killed with SIGKILL on the way out if it still runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("STEWARD_AUDIT_KEY", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.audit.writer", str(data_dir), mode],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()


def read_line(proc: subprocess.Popen[str]) -> str:
    """The next line the writer printed; fails if it died first."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"the writer exited with {proc.wait(timeout=30)} before printing")
    return line.strip()


def kill_9(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
