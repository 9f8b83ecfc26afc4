"""`steward run` with no configuration: the built-in day, ending by itself, with decisions."""

from __future__ import annotations

import getpass
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import AuditLog, Execution, Intent
from agent.audit.execution import unjudged_executions

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
    again = _steward("run", "--speed", "0", "--data-dir", data_dir, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["day_over"] is True  # a second run says so, runs nothing
    log = AuditLog.open(Path(data_dir), readonly=True)
    try:
        assert log.verify().ok
        outcomes = log.records(kind="outcome")
        intents = [r.payload for r in log.records() if isinstance(r.payload, Intent)]
        executions = [r.payload for r in log.records() if isinstance(r.payload, Execution)]
        assert unjudged_executions(log) == []
    finally:
        log.close()
    assert len(outcomes) >= 3  # burst-llm borrows render-1's cards, then gives them back
    # Demand favours split while the pair serves in cluster mode, in working hours: a human is
    # asked. Nobody answers; a request older than approval.expires_after is refused
    # (approval.expired) and asked again; the one asked last still waits when the day ends,
    # and the summary names it with the command that answers it.
    asked = [i for i in intents if any(p.action.type == "rotate_mode" for p in i.proposals)]
    assert asked, "the day never asked for the rotation"
    assert {p.verdict for i in asked for p in i.proposals} == {"needs_approval"}
    for earlier in asked[:-1]:
        refused = [e for e in executions if e.decision_id == earlier.decision_id]
        assert [v.rule_ids for e in refused for v in e.verdicts] == [("approval.expired",)]
    last = asked[-1].decision_id
    assert not [e for e in executions if e.decision_id == last]
    assert f"waiting for approval: {last}" in day.stdout
    (hint,) = [line for line in day.stdout.splitlines() if "answer with:" in line]
    answer = shlex.split(hint.split("answer with:", 1)[1])
    assert answer[:3] == ["steward", "approve", last] and answer[-2:] == ["--data-dir", data_dir]
    # Whoever runs it (root on CI) may not approve a rotation: the hint names an approver.
    assert ("--as" in answer) == (getpass.getuser() != "homelab-owner")
    pending = _steward("pending", "--json", "--data-dir", data_dir)
    assert [p["decision_id"] for p in json.loads(pending.stdout)] == [last]
    status = _steward("status", "--json", "--data-dir", data_dir)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["active_mode"]["name"] == "cluster"
    # The hint answers as printed.
    approved = _steward(*answer[1:])
    assert approved.returncode == 0, approved.stdout + approved.stderr


def test_the_tour_answers_the_rotation_in_time_and_it_runs(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "tour")
    asked = _steward("run", "--speed", "0", "--ticks", "270", "--data-dir", data_dir)
    assert asked.returncode == 0, asked.stderr
    pending = json.loads(_steward("pending", "--json", "--data-dir", data_dir).stdout)
    (decision,) = [p["decision_id"] for p in pending]
    answer = _steward("approve", decision, "--as", "homelab-owner", "--data-dir", data_dir)
    assert answer.returncode == 0, answer.stdout + answer.stderr
    ran = _steward("run", "--speed", "0", "--ticks", "40", "--data-dir", data_dir)
    assert ran.returncode == 0, ran.stderr
    status = _steward("status", "--json", "--data-dir", data_dir)
    assert json.loads(status.stdout)["active_mode"]["name"] == "split"
    log = AuditLog.open(Path(data_dir), readonly=True)
    try:
        assert log.verify().ok
        assert unjudged_executions(log) == []
    finally:
        log.close()
