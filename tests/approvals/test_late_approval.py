"""The hole of issue 11: an approval given after a freeze began was executed inside the freeze.

approve-burst.yaml plus a freeze from 01:05 local: the burst placement starts to wait at 01:00,
a person approves it at 01:06, inside the freeze. Approving re-checks who may approve; act used
to run the verdict judged at 01:00. Now act judges again on a fresh observation: the placement
is refused at execution with window.freeze, nothing runs, the log says so, and `steward approve`
already warned that it would be refused.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from agent.approvals.inbox import Inbox
from agent.audit import ApprovalRecord, Execution, Outcome, explain, render
from agent.audit.execution import unjudged_executions
from agent.daemon.runtime import Runtime
from tests.approvals.conftest import FREEZE, Recorder, cli, policy_with, sim_of
from tests.loop.conftest import open_runtime
from tests.loop.test_approval import SPIKE

FREEZE_STARTS = timedelta(minutes=5)
"""01:05 Europe/Madrid on the simulated day, which begins at 00:00 UTC (01:00 local)."""


def wait_for_approval(runtime: Runtime) -> str:
    """Tick until the burst placement waits for a human; its decision id."""
    for _ in range(6):
        report = runtime.tick(15.0)
        if report.waiting:
            assert report.verdicts == ("needs_approval",)
            return report.decision_id
    raise AssertionError("the spike never asked for approval")


def test_an_approval_given_inside_the_freeze_is_refused_at_execution(
    tmp_path: Path, data_dir: Path
) -> None:
    policy = policy_with(tmp_path, FREEZE)
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        start = sim_of(runtime).now
        decision = wait_for_approval(runtime)
        assert sim_of(runtime).now < start + FREEZE_STARTS  # it began to wait before the freeze
        while sim_of(runtime).now < start + FREEZE_STARTS + timedelta(minutes=1):
            runtime.tick(15.0)
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(policy),
    )  # fmt: skip
    assert code == 1, out
    assert "window.freeze" in out and "nothing of it will run" in out and "resumes" not in out
    recorder = Recorder()
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        runtime.ctx.notifier = recorder
        report = runtime.tick(15.0)
        assert report.resumed == (decision,)
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
        records = runtime.ctx.audit.decision(decision)
        assert runtime.ctx.audit.verify().ok
        assert unjudged_executions(runtime.ctx.audit) == []
    assert burst is not None and burst.desired_replicas == 0 and not burst.placement
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert approval.approved and approval.principal == "homelab-owner"
    execution = next(r for r in records if isinstance(r.payload, Execution))
    assert isinstance(execution.payload, Execution)
    (verdict,) = execution.payload.verdicts
    assert verdict.verdict == "deny" and verdict.refused_at_execution
    assert verdict.rule_ids == ("window.freeze",)
    assert execution.payload.observed_at >= start + FREEZE_STARTS
    outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
    assert not outcome.results[0].executed
    assert outcome.results[0].message.startswith("refused at execution by window.freeze")
    assert "refused_at_execution" in recorder.kinds()
    text = render(explain(records))
    assert "refused at execution by window.freeze" in text
    assert "approved by homelab-owner via cli" in text


def test_an_approval_in_time_still_runs_and_is_judged_at_execution(
    tmp_path: Path, data_dir: Path
) -> None:
    policy = policy_with(tmp_path, FREEZE)
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        decision = wait_for_approval(runtime)
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(policy),
    )  # fmt: skip
    assert code == 0, out
    assert "judging it again first" in out
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        assert runtime.tick(15.0).resumed == (decision,)
        records = runtime.ctx.audit.decision(decision)
        assert unjudged_executions(runtime.ctx.audit) == []
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 1
    execution = next(r.payload for r in records if isinstance(r.payload, Execution))
    (verdict,) = execution.verdicts
    assert verdict.verdict == "allow" and verdict.rule_ids == ("approval.burst_needs_a_human",)
    assert "approved by homelab-owner via cli" in verdict.message
    kinds = [r.kind for r in records]
    assert kinds.index("approval") < kinds.index("execution") < kinds.index("outcome")
    inbox = Inbox.open(data_dir)
    try:
        entry = inbox.get(decision)
    finally:
        inbox.close()
    assert entry is not None and entry.status == "resumed"
