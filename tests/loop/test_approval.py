"""A decision that needs approval waits; `steward approve` resumes it, `steward deny` drops it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.audit import ApprovalRecord, Outcome
from agent.cli.app import app
from lab.sim.demand import BurstDemand
from lab.sim.scenario import Scenario
from tests.loop.conftest import APPROVE_BURST, open_runtime

SPIKE = Scenario(
    name="spike-approval",
    replicas={"render": 0, "burst-llm": 0},
    demand=(BurstDemand(target="burst-llm", rate_per_min=60, at_s=20, duration_s=3600),),
)
runner = CliRunner()


def _cli(*args: str) -> tuple[int, str]:
    if args[0] in ("approve", "deny"):
        args = (*args, "--policy", str(APPROVE_BURST))
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def _waiting(data_dir: Path) -> list[dict[str, object]]:
    code, out = _cli("pending", "--json", "--data-dir", str(data_dir))
    assert code == 0, out
    found: list[dict[str, object]] = json.loads(out)
    return found


def _spike_until_waiting(data_dir: Path) -> str:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        for _ in range(4):
            report = runtime.tick(15.0)
            if report.waiting:
                break
        assert report.waiting and report.verdicts == ("needs_approval",)
        for _ in range(3):  # later ticks do not ask again for what already waits
            assert not runtime.tick(15.0).waiting
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
        assert burst is not None and burst.desired_replicas == 0
    return report.decision_id


def test_approve_resumes_the_waiting_decision(data_dir: Path) -> None:
    decision = _spike_until_waiting(data_dir)
    assert [p["decision_id"] for p in _waiting(data_dir)] == [decision]
    code, out = _cli("approve", decision, "--data-dir", str(data_dir), "--as", "nobody")
    assert code == 2 and "not a member of any approver group" in out
    code, out = _cli("approve", decision, "--data-dir", str(data_dir), "--as", "homelab-owner")
    assert code == 0, out
    assert _waiting(data_dir) == []
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        report = runtime.tick(15.0)
        assert report.resumed == (decision,)
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
        records = runtime.ctx.audit.decision(decision)
        assert runtime.ctx.audit.verify().ok
    assert burst is not None and burst.desired_replicas >= 1
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert approval.approved and approval.principal == "homelab-owner"
    outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
    assert outcome.results[0].executed and outcome.results[0].ok


def test_deny_drops_the_waiting_decision(data_dir: Path) -> None:
    decision = _spike_until_waiting(data_dir)
    code, out = _cli(
        "deny", decision, "--reason", "not today", "--as", "homelab-owner",
        "--data-dir", str(data_dir),
    )  # fmt: skip
    assert code == 0, out
    code, out = _cli("approve", decision, "--data-dir", str(data_dir), "--as", "homelab-owner")
    assert code == 2 and "already denied" in out
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        report = runtime.tick(15.0)
        assert report.resumed == (decision,)
        records = runtime.ctx.audit.decision(decision)
        assert runtime.ctx.audit.verify().ok
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert not approval.approved and approval.note == "not today"
    outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
    assert not outcome.results[0].executed
    assert outcome.results[0].message == "approval was not given"


def test_unknown_decision_is_bad_input(data_dir: Path) -> None:
    code, out = _cli("approve", "d-000000000000", "--data-dir", str(data_dir))
    assert code == 2 and "steward pending" in out
