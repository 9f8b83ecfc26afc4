"""`steward mode status|rotate|resume|journal` and `steward bench rotate`: a rotation requested by a
person takes the guard's door — denied, waiting for approval, approved and run — and every
command prints one JSON document with --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent.audit import AuditLog
from agent.cli.app import app
from lab.sim.backend import SimCluster
from tools.modes import Journal, RotationPlan

runner = CliRunner()


def steward(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout


def as_json(*args: str) -> tuple[int, Any]:
    code, out = steward(*args, "--json")
    return code, json.loads(out)


def day_past_dwell(data_dir: Path) -> None:
    """The built-in day's cluster (08:00 Madrid: working hours), past the 30-minute dwell."""
    code, _ = steward("mode", "status", "--data-dir", str(data_dir))
    assert code == 0
    sim = SimCluster.open(data_dir)
    sim.advance(1900)
    sim.save(data_dir)


def test_status_shows_the_modes_the_link_and_the_advice(tmp_path: Path) -> None:
    code, doc = as_json("mode", "status", "--data-dir", str(tmp_path))
    assert code == 0
    assert doc["active_mode"] == "cluster"
    assert [m["name"] for m in doc["modes"]] == ["split", "cluster"]
    assert doc["links"][0]["configured_gid_index"] == 3
    assert doc["open_rotation"] is None and doc["last_rotation"] is None
    assert doc["advice"]["rotate"] is False


def test_a_dry_run_judges_and_preflights_but_changes_and_records_nothing(tmp_path: Path) -> None:
    code, doc = as_json("mode", "rotate", "split", "--dry-run", "--data-dir", str(tmp_path))
    assert code == 1
    assert doc["verdict"]["decision"] == "deny"
    assert doc["verdict"]["rule_ids"] == ["mode.min_dwell"]
    assert doc["ok"] is True and doc["plan"]["outgoing"] == {"beast": 1}
    assert not (tmp_path / "audit.db").exists()
    assert not Journal.open(tmp_path).path.exists()


def test_an_unknown_mode_is_bad_input(tmp_path: Path) -> None:
    code, _ = steward("mode", "rotate", "turbo", "--data-dir", str(tmp_path))
    assert code == 2


def test_a_rotation_before_the_dwell_is_denied_and_recorded(tmp_path: Path) -> None:
    code, doc = as_json("mode", "rotate", "split", "--data-dir", str(tmp_path))
    assert code == 1
    assert doc["status"] == "denied" and doc["outcome"] is None
    assert "it must stay 30m" in doc["message"]
    log = AuditLog.open(tmp_path, readonly=True)
    kinds = [r.kind for r in log.decision(doc["decision_id"])]
    log.close()
    assert kinds == ["intent", "outcome"]
    active = SimCluster.open(tmp_path).observe().active_mode
    assert active is not None and active.name == "cluster"


def test_a_rotation_in_working_hours_waits_for_approval_then_runs(tmp_path: Path) -> None:
    where = str(tmp_path)
    day_past_dwell(tmp_path)
    code, asked = as_json("mode", "rotate", "split", "--data-dir", where)
    assert code == 1 and asked["status"] == "pending"
    decision = asked["decision_id"]
    assert f"steward approve {decision}" in asked["message"]
    _, waiting = as_json("pending", "--data-dir", where)
    assert [p["decision_id"] for p in waiting] == [decision]
    code, _ = steward("approve", decision, "--as", "homelab-owner", "--data-dir", where)
    assert code == 0
    code, _ = steward("mode", "rotate", "cluster", "--decision", decision, "--data-dir", where)
    assert code == 2  # the decision was for split

    code, done = as_json("mode", "rotate", "split", "--decision", decision, "--data-dir", where)
    assert code == 0, done
    assert done["status"] == "ran" and done["outcome"]["result"] == "committed"
    checks = done["outcome"]["preflight"]["checks"]
    assert any("approved by homelab-owner via cli" in c["message"] for c in checks)
    (txn,) = Journal.open(tmp_path).transactions()
    plan = RotationPlan.model_validate(txn.begin.detail["plan"])
    assert plan.decision_id == decision
    assert [a.principal for a in plan.approvals] == ["homelab-owner"]
    code, verify = steward("audit", "verify", "--data-dir", where)
    assert code == 0, verify
    log = AuditLog.open(tmp_path, readonly=True)
    kinds = [r.kind for r in log.decision(decision)]
    log.close()
    assert kinds[0] == "intent" and "approval" in kinds and kinds[-1] == "outcome"
    assert kinds.count("mode_step") == len(txn.entries)


def test_a_denied_rotation_never_runs(tmp_path: Path) -> None:
    where = str(tmp_path)
    day_past_dwell(tmp_path)
    _, asked = as_json("mode", "rotate", "split", "--data-dir", where)
    decision = asked["decision_id"]
    code, _ = steward(
        "deny", decision, "--reason", "demo tonight", "--as", "homelab-owner", "--data-dir", where
    )
    assert code == 0
    code, done = as_json("mode", "rotate", "split", "--decision", decision, "--data-dir", where)
    assert code == 1 and done["status"] == "refused_by_human"
    assert "demo tonight" in done["message"]
    assert not Journal.open(tmp_path).path.exists()


def test_resume_with_nothing_open_says_so(tmp_path: Path) -> None:
    code, doc = as_json("mode", "resume", "--data-dir", str(tmp_path))
    assert code == 0 and doc == {"resumed": None}


def test_bench_rotate_prints_its_figures(tmp_path: Path) -> None:
    code, doc = as_json("bench", "rotate", "--runs", "6", "--seed", "1")
    assert code == 0
    assert doc["runs"] == 6 and doc["ended_without_working_mode"] == 0
    assert doc["zero_capacity_outside_window"] == 0
    rates = doc["success_rate"] + doc["rollback_rate"] + doc["refused_rate"] + doc["fallback_rate"]
    assert abs(rates - 1.0) < 1e-6
    assert doc["median_ms"] > 0 and doc["p99_ms"] >= doc["median_ms"]


def test_a_damaged_journal_is_refused_with_its_place(tmp_path: Path) -> None:
    # The data dir holds a simulated cluster (a dir with a journal and no sim.json is refused
    # first, as history without its cluster); then its journal is damaged.
    assert runner.invoke(app, ["mode", "status", "--data-dir", str(tmp_path)]).exit_code == 0
    journal = Journal.open(tmp_path)
    journal.path.parent.mkdir(parents=True, exist_ok=True)
    journal.path.write_text("{not json\n")
    result = runner.invoke(app, ["mode", "status", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "journal.jsonl:1" in result.stderr


def test_the_journal_prints_every_step(tmp_path: Path) -> None:
    where = str(tmp_path)
    day_past_dwell(tmp_path)
    _, asked = as_json("mode", "rotate", "split", "--data-dir", where)
    steward("approve", asked["decision_id"], "--as", "homelab-owner", "--data-dir", where)
    steward("mode", "rotate", "split", "--decision", asked["decision_id"], "--data-dir", where)
    code, found = as_json("mode", "journal", "--data-dir", where)
    assert code == 0
    (txn,) = found
    steps = [(e["step"], e["status"]) for e in txn["entries"] if e["step"]]
    assert steps[0] == ("preflight", "started") and steps[-1] == ("commit", "done")
    assert txn["entries"][-1]["result"] == "committed"


def test_a_rotation_is_refused_while_the_agent_writes_the_log(tmp_path: Path) -> None:
    steward("mode", "status", "--data-dir", str(tmp_path))
    daemon = AuditLog.open(tmp_path)
    try:
        result = runner.invoke(app, ["mode", "rotate", "split", "--data-dir", str(tmp_path)])
    finally:
        daemon.close()
    assert result.exit_code == 1
    assert "ask it for the rotation instead" in result.stderr
    assert not Journal.open(tmp_path).path.exists()
