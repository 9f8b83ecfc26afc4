"""The daemon's log: one line per event, and on a terminal a short one — one clock, labelled and
in UTC, cut to the terminal's width (every field with -v, or in the JSON lines off a terminal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.daemon.logs import short_line

ROOT = Path(__file__).resolve().parents[2]


def test_a_finding_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", "--ticks", "60", "--speed", "0", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**env, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    about = [e for e in events if "context_below_fit" in json.dumps(e)]
    assert [e["event"] for e in about] == ["finding appeared"], about
    assert about[0]["at"].startswith("2026-03-02T07:12:15")  # the cluster's time, labelled


def test_a_terminal_line_has_one_labelled_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    line = short_line(
        None,
        "info",
        {
            "event": "finding appeared",
            "level": "info",
            "timestamp": "2026-12-06T18:15:51.930150Z",
            "at": "2026-03-02T08:12:15+01:00",
            "text": "burst-llm: qwen3-32b is set to 32,768 tokens of context; " + "x" * 100,
            "key": "context_below_fit:burst-llm",
        },
    )
    assert line.startswith("cluster 07:12:15Z info    finding appeared: burst-llm: qwen3-32b")
    assert "18:15" not in line and "+01:00" not in line
    assert len(line) == 80 and line.endswith("…")


def test_an_event_of_the_host_has_the_hosts_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    line = short_line(
        None,
        "warning",
        {
            "event": "slack unreachable; retrying later",
            "level": "warning",
            "timestamp": "2026-12-06T18:15:51.930150Z",
            "error": "connection refused",
            "wait_s": 2.0,
        },
    )
    assert line == (
        "host 18:15:51Z warning slack unreachable; retrying later: "
        "error=connection refused wait_s=2.0"
    )
