"""`steward bench chaos`: a short soak keeps every invariant, and the checks it ends with do
catch what they are for (an action run on a deny verdict, twice, or an intent lost)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import ActionOutcome, AuditLog, Outcome, Startup
from lab.bench.chaos import check_log
from tests.audit.builders import FakeClock, approval, intent, outcome

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_a_short_soak_kills_restarts_and_keeps_every_invariant() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "bench", "chaos", "--minutes", "1.5", "--seed", "3",
         "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip

    report = json.loads(done.stdout)
    assert done.returncode == 0, report["problems"]
    assert report["violations"] == 0 and report["kills"] >= 2
    assert report["restarts"] >= report["kills"]
    assert sum(report["llm_answers"].values()) >= 1


def test_the_checks_pass_a_clean_log(tmp_path: Path) -> None:
    with AuditLog.open(tmp_path, clock=FakeClock()) as log:
        log.append(Startup(pid=1, host="h", version="0.1.0"))
        log.write_intent(intent("d-1"))
        log.write_approval(approval("d-1"))
        log.write_outcome(outcome("d-1"))

    found = check_log(tmp_path)

    assert found.problems == [] and found.decisions == 1 and found.executed == 2


def test_the_checks_catch_a_denied_action_run_and_an_intent_lost(tmp_path: Path) -> None:
    ran_denied = Outcome(
        decision_id="d-1",
        results=(
            ActionOutcome.skipped(0, "not this one"),
            ActionOutcome.skipped(1, "no approval"),
            ActionOutcome(index=2, executed=True, ok=True, changed=True, message="drained"),
        ),
    )
    with AuditLog.open(tmp_path, clock=FakeClock()) as log:
        log.write_intent(intent("d-1"))
        log.write_outcome(ran_denied)
        log.write_intent(intent("d-2"))  # never closed, nobody waits for it

    problems = check_log(tmp_path).problems

    assert "d-1: action 2 executed on verdict deny" in problems
    assert "d-2: intent neither closed nor waiting for a human (lost)" in problems


def test_the_checks_catch_an_action_run_without_its_approval(tmp_path: Path) -> None:
    with AuditLog.open(tmp_path, clock=FakeClock()) as log:
        log.write_intent(intent("d-1"))
        log.write_outcome(outcome("d-1"))  # action 1 needed approval; none was recorded

    assert "d-1: action 1 executed on verdict needs_approval" in check_log(tmp_path).problems
