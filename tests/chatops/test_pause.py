"""`steward pause` / `resume`: a paused agent observes and records, runs nothing, and stays
paused across a restart; answered approvals wait until it is resumed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.audit import Intent, Outcome
from agent.cli.app import app
from agent.daemon.runtime import Runtime
from lab.sim.backend import SimCluster
from policies.loader import DEFAULT_POLICY, load_policy
from tests.chatops.conftest import OWNER, SPIKE, Rig

runner = CliRunner()


def _cli(*args: str) -> dict[str, object]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    found: dict[str, object] = json.loads(result.output)
    return found


def _open(data_dir: Path) -> Runtime:
    runtime = Runtime.open(data_dir, SimCluster.open(data_dir, SPIKE), load_policy(DEFAULT_POLICY))
    runtime.start()
    return runtime


def test_a_paused_agent_decides_and_records_but_runs_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "steward"
    data_dir.mkdir()
    paused = _cli("pause", "--reason", "swapping a PSU", "--as", "homelab-owner",
                  "--data-dir", str(data_dir))  # fmt: skip
    assert paused["changed"] is True and paused["by"] == "homelab-owner"
    assert _cli("pause", "--data-dir", str(data_dir))["changed"] is False
    with _open(data_dir) as runtime:
        reports = [runtime.tick(15.0) for _ in range(4)]
        decided = [r for r in reports if r.decided]
        assert decided and all(r.executed == 0 for r in reports)
        records = runtime.ctx.audit.decision(decided[0].decision_id)
        assert any(isinstance(r.payload, Intent) for r in records)
        outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
        assert not outcome.results[0].executed
        assert "paused by homelab-owner" in outcome.results[0].message
        assert "swapping a PSU" in outcome.results[0].message
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
        assert burst is not None and burst.desired_replicas == 0
    with _open(data_dir) as runtime:  # a restart: still paused
        assert runtime.tick(15.0).executed == 0
    assert _cli("resume", "--data-dir", str(data_dir))["changed"] is True
    with _open(data_dir) as runtime:
        executed = sum(runtime.tick(15.0).executed for _ in range(4))
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
    assert executed >= 1 and burst is not None and burst.desired_replicas >= 1


def test_an_approval_waits_while_paused(rig: Rig) -> None:
    decision = rig.tick_until_waiting()
    rig.approval_message(decision)
    assert rig.slash("pause the demo is on", OWNER) == 200
    rig.stub.wait_for((rig.data_dir / "pause.json").is_file)
    assert rig.slash(f"approve {decision}", OWNER) == 200
    rig.stub.wait_for(lambda: rig.pending(decision).status == "approved")
    assert rig.runtime.tick(15.0).resumed == ()
    assert rig.pending(decision).status == "approved"
    assert rig.slash("resume", OWNER) == 200
    rig.stub.wait_for(lambda: not (rig.data_dir / "pause.json").is_file())
    assert rig.runtime.tick(15.0).resumed == (decision,)

    def announced(words: str) -> bool:
        return any(words in c.params.get("text", "") for c in rig.stub.of("chat.postMessage"))

    rig.stub.wait_for(lambda: announced(f"] paused: the agent is paused by {OWNER}"))
    rig.stub.wait_for(lambda: announced("] resumed: the agent was resumed"))
