"""`steward policy check|explain` and `steward bench policy`, through the real CLI app."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.cli.app import app
from policies.loader import DEFAULT_POLICY

runner = CliRunner()


def test_check_accepts_the_default_policy() -> None:
    result = runner.invoke(app, ["policy", "check", str(DEFAULT_POLICY)])
    assert result.exit_code == 0, result.output
    assert "ok — 4 pools" in result.stdout


def test_check_refuses_min_above_max_with_one_line_per_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "pools:\n  render: {min_cards: 3, max_cards: 2}\n  gx10: {max_cards: 2}\nextra: 1\n"
    )
    result = runner.invoke(app, ["policy", "check", str(bad)])
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [
        f"{bad}:4:1: unknown key 'extra' in the top level; allowed keys: activity, approval, "
        "approvals, approvers, budget, change_budget, cooldowns, deliberate, pools, protected, "
        "reactive, rotation, slo, timezone, version, windows",
    ]
    bad.write_text("pools:\n  render: {min_cards: 3, max_cards: 2}\n")
    result = runner.invoke(app, ["policy", "check", str(bad)])
    assert result.exit_code == 2
    assert result.stdout.startswith(f"{bad}:2:37: pools.render.max_cards (2) is below min_cards")


def test_check_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("pools: {a: {max_cards: x}}\n")
    result = runner.invoke(app, ["policy", "check", str(bad), "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["ok"] is False
    assert doc["problems"][0]["line"] == 1 and doc["problems"][0]["column"] == 24


def test_explain_a_scale_to_zero_against_the_simulated_homelab(tmp_path: Path) -> None:
    action = json.dumps({"type": "scale_workload", "workload": "beast", "replicas": 0})
    result = runner.invoke(
        app, ["policy", "explain", "--action", action, "--data-dir", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (verdict,) = doc["verdicts"]
    assert verdict["decision"] == "deny"
    assert "pool.min_cards" in verdict["rule_ids"]
    assert "serving.min_ready_replicas" in verdict["rule_ids"]


def test_explain_prints_the_verdict_and_the_rules(tmp_path: Path) -> None:
    plan = json.dumps([
        {"type": "rotate_mode", "target_mode": "split"},
        {"type": "scale_workload", "workload": "ghost", "replicas": 1},
    ])  # fmt: skip
    result = runner.invoke(
        app,
        ["policy", "explain", "--action", plan, "--data-dir", str(tmp_path),
         "--at", "2026-03-02T11:00:00"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "#1 rotate to mode split" in out
    assert "decision: needs_approval" in out
    assert "approval.rotate_working_hours" in out
    assert "#2 scale ghost to 1 replica(s)" in out
    assert "target.unknown" in out


def test_explain_refuses_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["policy", "explain", "--action", "{nope",
                                 "--data-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2
    result = runner.invoke(app, ["policy", "explain", "--action", '{"type": "explode"}',
                                 "--data-dir", str(tmp_path)])  # fmt: skip
    assert result.exit_code == 2
    assert "not a valid action" in result.output


def test_bench_policy_prints_figures() -> None:
    result = runner.invoke(
        app, ["bench", "policy", "--json", "--runs", "5", "--nodes", "40", "--actions", "20"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["nodes"] == 40 and doc["actions"] == 20
    assert doc["median_ms"] > 0 and doc["p99_ms"] >= doc["median_ms"]
    assert sum(doc["decisions"].values()) == 20
