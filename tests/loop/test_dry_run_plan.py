"""`steward plan` decides dry: it prints what would happen and changes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from agent.audit import AuditLog, DryRunPlan
from agent.cli.app import app
from tests.loop.conftest import DATA

runner = CliRunner()


def _fingerprint(data_dir: Path) -> dict[str, str]:
    """Every state file but the log and its witness (which gain exactly one dry-run record)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(data_dir.iterdir())
        if p.is_file() and not p.name.startswith(("audit.db", "audit.head"))
    }


def test_plan_after_run_changes_nothing_and_records_a_dry_run(data_dir: Path) -> None:
    # Under a change freeze the run proposes and is denied each tick, so the spike is still
    # there to plan for afterwards.
    scenario, policy = str(DATA / "spike.yaml"), str(DATA / "frozen.yaml")
    ran = runner.invoke(
        app, ["run", "--scenario", scenario, "--policy", policy, "--ticks", "3", "--speed", "0",
              "--data-dir", str(data_dir)],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    before = _fingerprint(data_dir)
    log = AuditLog.open(data_dir, readonly=True)
    count = len(log.records())
    log.close()
    planned = runner.invoke(app, ["plan", "--json", "--data-dir", str(data_dir)])
    assert planned.exit_code == 0, planned.output
    result = json.loads(planned.stdout)
    assert result["dry_run"] is True
    assert result["findings"], "the spike is still there: the plan has something to decide"
    action = result["actions"][0]
    assert action["describe"] == "place a replica of burst-llm on render-1"
    assert action["verdict"] == "deny" and action["rule_ids"] == ["window.freeze"]
    assert action["expected_effect"].startswith("burst-llm: 0 -> 1 replica(s) on render-1")
    assert _fingerprint(data_dir) == before
    log = AuditLog.open(data_dir, readonly=True)
    records = log.records()
    assert log.verify().ok
    log.close()
    assert len(records) == count + 1
    record = records[-1].payload
    assert isinstance(record, DryRunPlan) and record.dry_run
    assert record.decision_id == result["decision_id"] == records[-1].decision_id


def test_plan_on_a_quiet_cluster_says_there_is_nothing_to_decide(data_dir: Path) -> None:
    planned = runner.invoke(app, ["plan", "--data-dir", str(data_dir)])
    assert planned.exit_code == 0, planned.output
    assert "nothing to decide" in planned.output
