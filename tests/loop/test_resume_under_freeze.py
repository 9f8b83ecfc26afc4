"""A decision killed (kill -9) on its way to act, resumed by a restart under a freeze policy:
the resumed act judges again on a fresh observation with the policy given at restart, refuses
with window.freeze and runs nothing (issue 19: "ran under a freeze policy given at restart")."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from agent.audit import AuditLog, Execution, Intent, Outcome
from agent.audit.execution import unjudged_executions
from lab.sim.backend import SimCluster
from tests.loop.conftest import DATA
from tests.loop.test_crash_recovery import SPIKE, _run, _steward

pytestmark = pytest.mark.slow


def test_a_decision_resumed_at_act_is_judged_under_the_policy_of_the_restart(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "d"
    killed = _run(data_dir, 8, "--scenario", str(SPIKE), crash_at="act")
    assert killed == -signal.SIGKILL, "the daemon did not reach act"
    assert _run(data_dir, 1, "--policy", str(DATA / "frozen.yaml")) == 0
    verify = _steward("audit", "verify", "--data-dir", str(data_dir))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    log = AuditLog.open(data_dir, readonly=True)
    try:
        executions = [r.payload for r in log.records(kind="execution")]
        intents = [r.payload for r in log.records(kind="intent")]
        outcomes = [r.payload for r in log.records(kind="outcome")]
        problems = unjudged_executions(log)
    finally:
        log.close()
    assert problems == []
    (execution,) = executions  # the resumed decision: the only one that came to act
    assert isinstance(execution, Execution)
    (intent,) = intents
    assert isinstance(intent, Intent) and intent.decision_id == execution.decision_id
    assert intent.proposals[0].verdict == "allow"  # allowed when it was proposed
    for verdict in execution.verdicts:
        assert verdict.verdict == "deny" and verdict.refused_at_execution
        assert "window.freeze" in verdict.rule_ids
    (outcome,) = outcomes
    assert isinstance(outcome, Outcome)
    assert not any(r.executed for r in outcome.results)
    burst = SimCluster.open(data_dir).observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 0 and not burst.placement
