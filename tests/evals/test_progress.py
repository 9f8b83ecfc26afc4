"""`steward eval` says how far it got while it runs, on a terminal only: its stderr on a pseudo
terminal shows the cases counted; with --json (or piped) stderr carries no progress at all."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATEGORY = "preemption"


def eval_with_stderr_on_a_terminal(*args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "eval", "--category", CATEGORY, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
        env={**env, "TERM": "xterm", "COLUMNS": "120"},
    )
    os.close(follower)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: the process is gone
            break
        if not chunk:
            break
        seen += chunk
    stdout, _ = process.communicate(timeout=300)
    os.close(leader)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, "")
    return done, seen.decode("utf-8", "replace")


def test_progress_on_a_terminal() -> None:
    done, terminal = eval_with_stderr_on_a_terminal()
    assert done.returncode in (0, 1), terminal
    assert "eval: " in terminal and "case(s)" in terminal, terminal
    assert "done: " in terminal  # counted as the cases finished
    assert "case(s)" not in done.stdout  # the scorecard alone on stdout


def test_none_with_json() -> None:
    done, terminal = eval_with_stderr_on_a_terminal("--json")
    assert done.returncode in (0, 1), terminal
    assert json.loads(done.stdout)["cases"]
    assert "eval: " not in terminal and "case(s)" not in terminal, terminal
