"""`steward run` with no configuration: the built-in day, ending by itself, with decisions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import AuditLog

STEWARD = [sys.executable, "-m", "agent.cli"]
pytestmark = pytest.mark.slow


def _steward(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STEWARD, *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_the_built_in_day_runs_to_its_end_and_decides(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "d")
    day = _steward("run", "--speed", "0", "--data-dir", data_dir)
    assert day.returncode == 0, day.stderr
    # The summary is the command's result: on stdout, naming what ran and what waits for whom.
    assert "480 tick(s)" in day.stdout
    assert "scale render to 0 replica(s)" in day.stdout
    assert "waiting for approval: d-" in day.stdout and "rotate to mode split" in day.stdout
    again = _steward("run", "--speed", "0", "--data-dir", data_dir, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["day_over"] is True  # a second run says so, runs nothing
    log = AuditLog.open(Path(data_dir), readonly=True)
    try:
        assert log.verify().ok
        outcomes = log.records(kind="outcome")
    finally:
        log.close()
    assert len(outcomes) >= 3  # burst-llm borrows render-1's cards, then gives them back
    pending = _steward("pending", "--json", "--data-dir", data_dir)
    waiting = json.loads(pending.stdout)
    # Demand favours split while the pair serves in cluster mode, in working hours: ask a human.
    assert [a["type"] for p in waiting for a in p["actions"]] == ["rotate_mode"]
    status = _steward("status", "--json", "--data-dir", data_dir)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["active_mode"]["name"] == "cluster"
