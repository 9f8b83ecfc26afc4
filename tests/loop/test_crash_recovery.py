"""kill -9 of the daemon at every node of the graph: the restart resumes or reconciles.

The daemon kills itself (SIGKILL, no cleanup) when it reaches the node named by
STEWARD_TEST_CRASH_AT. A second `steward run` on the same data dir must finish the interrupted
decision without running any action twice, lose none (the log and the cluster agree), and
leave a decision log that `steward audit verify` finds intact.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import AuditLog, Intent, Outcome
from lab.sim.backend import SimCluster
from tests.loop.conftest import APPROVE_BURST, DATA
from tools.actions import PlaceReplica

SPIKE = DATA / "spike.yaml"
STEWARD = [sys.executable, "-m", "agent.cli"]
pytestmark = pytest.mark.slow


def _steward(*args: str, crash_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STEWARD_TEST_CRASH_AT"}
    if crash_at:
        env["STEWARD_TEST_CRASH_AT"] = crash_at
    return subprocess.run(
        [*STEWARD, *args], env=env, capture_output=True, text=True, timeout=240, check=False
    )


def _run(data_dir: Path, ticks: int, *extra: str, crash_at: str | None = None) -> int:
    done = _steward(
        "run", "--ticks", str(ticks), "--speed", "0", "--data-dir", str(data_dir), *extra,
        crash_at=crash_at,
    )  # fmt: skip
    if done.returncode not in (0, -signal.SIGKILL):
        print(done.stdout, done.stderr)  # shown by pytest when the test fails
    return done.returncode


def _placements(data_dir: Path) -> int:
    """Burst-llm placements the log says took effect: run, or found applied after a crash."""
    log = AuditLog.open(data_dir, readonly=True)
    try:
        assert log.verify().ok, log.verify().summary()
        assert log.unfinished_intents() == []
        count = 0
        for record in log.records(kind="intent"):
            intent = record.payload
            assert isinstance(intent, Intent)
            outcomes = [r.payload for r in log.decision(intent.decision_id) if r.kind == "outcome"]
            assert len(outcomes) <= 1, f"{intent.decision_id} has {len(outcomes)} outcomes"
            for outcome in outcomes:
                assert isinstance(outcome, Outcome)
                for result in outcome.results:
                    action = intent.proposals[result.index].action
                    took = result.ok and (
                        result.executed or bool(result.detail.get("observed_applied"))
                    )
                    if isinstance(action, PlaceReplica) and action.workload == "burst-llm" and took:
                        count += 1
        return count
    finally:
        log.close()


@pytest.mark.parametrize(
    "node", ["observe", "assess", "plan", "guard", "act", "act.mid", "verify", "record"]
)
def test_kill_at_each_node_then_restart(tmp_path: Path, node: str) -> None:
    data_dir = tmp_path / "d"
    killed = _run(data_dir, 8, "--scenario", str(SPIKE), crash_at=node)
    assert killed == -signal.SIGKILL, f"the daemon did not reach {node}"
    assert _run(data_dir, 4) == 0
    verify = _steward("audit", "verify", "--data-dir", str(data_dir))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    burst = SimCluster.open(data_dir).observe().workload("burst-llm")
    assert burst is not None
    placed = _placements(data_dir)
    assert burst.desired_replicas == placed >= 1, (burst.desired_replicas, placed)


def test_kill_while_asking_for_approval_then_approve(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    policy = ("--policy", str(APPROVE_BURST))
    killed = _run(data_dir, 8, "--scenario", str(SPIKE), *policy, crash_at="approve")
    assert killed == -signal.SIGKILL
    assert _run(data_dir, 1, *policy) == 0
    pending = _steward("pending", "--json", "--data-dir", str(data_dir))
    assert pending.returncode == 0, pending.stderr
    decision = pending.stdout.split('"decision_id": "')[1].split('"')[0]
    answer = _steward("approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir))
    assert answer.returncode == 0, answer.stderr
    assert _run(data_dir, 1, *policy) == 0
    burst = SimCluster.open(data_dir).observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == _placements(data_dir) == 1
