"""Approvals expire: unanswered for approval.expires_after, or approved and not carried out
within it, a request is refused (approval.expired) in the decision log; `steward approve` on it
says so and exits 1, never "resumed"."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.approvals.inbox import Inbox
from agent.audit import ApprovalRecord, Execution, Outcome, Record
from agent.audit.execution import unjudged_executions
from policies.loader import load_policy
from policies.model import Policy
from tests.approvals.conftest import Recorder, cli, policy_with, sim_of
from tests.approvals.test_late_approval import wait_for_approval
from tests.loop.conftest import APPROVE_BURST, open_runtime
from tests.loop.test_approval import SPIKE

SHORT = "approval: {expires_after: 2m}\n"


def _status(data_dir: Path, decision: str) -> str:
    inbox = Inbox.open(data_dir)
    try:
        entry = inbox.get(decision)
    finally:
        inbox.close()
    assert entry is not None
    return entry.status


def _gate(records: list[Record]) -> Execution:
    found = next(r.payload for r in records if isinstance(r.payload, Execution))
    assert isinstance(found, Execution)
    return found


def test_the_default_is_thirty_minutes_and_zero_is_refused() -> None:
    assert load_policy(APPROVE_BURST).approval.expires_after.total_seconds() == 1800
    with pytest.raises(ValueError, match="longer than 0"):
        Policy.model_validate({"pools": {}, "approval": {"expires_after": "0s"}})


def test_an_unanswered_request_expires_and_is_refused_in_the_log(
    tmp_path: Path, data_dir: Path
) -> None:
    policy = policy_with(tmp_path, SHORT)
    recorder = Recorder()
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        runtime.ctx.notifier = recorder
        decision = wait_for_approval(runtime)
        resumed: tuple[str, ...] = ()
        for _ in range(12):  # 3 minutes of 15 s ticks
            resumed += runtime.tick(15.0).resumed
        assert decision in resumed
        records = runtime.ctx.audit.decision(decision)
        assert unjudged_executions(runtime.ctx.audit) == []
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 0
    assert not any(isinstance(r.payload, ApprovalRecord) for r in records)  # nobody answered
    (verdict,) = _gate(records).verdicts
    assert verdict.verdict == "deny" and verdict.rule_ids == ("approval.expired",)
    assert verdict.refused_at_execution and "nobody answered within" in verdict.message
    outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
    assert not outcome.results[0].executed
    assert "approval.expired" in outcome.results[0].message
    assert "refused_at_execution" in recorder.kinds()
    assert _status(data_dir, decision) == "expired"
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(policy),
    )  # fmt: skip
    assert code == 1 and "expired" in out and "approval.expired" in out
    assert "resume" not in out


def test_approving_after_expiry_before_the_agent_noticed_says_expired(
    tmp_path: Path, data_dir: Path
) -> None:
    policy = policy_with(tmp_path, SHORT)
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        decision = wait_for_approval(runtime)
        sim_of(runtime).advance(180.0)  # the agent is not deciding meanwhile: nothing expired it
        sim_of(runtime).save(data_dir)
    assert _status(data_dir, decision) == "waiting"
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(policy),
    )  # fmt: skip
    assert code == 1 and f"decision {decision} expired at" in out
    assert _status(data_dir, decision) == "waiting"  # the agent records the refusal itself
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        assert decision in runtime.tick(15.0).resumed
        (verdict,) = _gate(runtime.ctx.audit.decision(decision)).verdicts
    assert verdict.rule_ids == ("approval.expired",)


def test_an_approval_not_carried_out_in_time_expires(tmp_path: Path, data_dir: Path) -> None:
    policy = policy_with(tmp_path, SHORT)
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        decision = wait_for_approval(runtime)
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(policy),
    )  # fmt: skip
    assert code == 0, out
    with open_runtime(data_dir, SPIKE, policy) as runtime:
        sim_of(runtime).advance(180.0)  # the agent was down for three minutes after the answer
        assert decision in runtime.decide().resumed
        records = runtime.ctx.audit.decision(decision)
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 0
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert approval.approved  # the answer is kept; the gate refused to act on it this late
    (verdict,) = _gate(records).verdicts
    assert verdict.rule_ids == ("approval.expired",) and "not carried out" in verdict.message
