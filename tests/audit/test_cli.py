"""`steward audit verify|show|explain|export` and `steward bench audit`, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.audit import DB_NAME, KEY_ENV, AuditLog, Startup
from agent.cli.app import app
from tests.audit import tamper
from tests.audit.builders import FakeClock, approval, intent, outcome

runner = CliRunner()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    with AuditLog.open(tmp_path, clock=FakeClock()) as log:
        log.append(Startup(pid=4242, host="gx10-a", version="0.1.0"))
        log.write_intent(intent("d-1"))
        log.write_approval(approval("d-1"))
        log.write_outcome(outcome("d-1"))
        log.write_intent(intent("d-2"))
    return tmp_path


def steward(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_verify_passes_an_intact_log(data: Path) -> None:
    code, out, _ = steward("audit", "verify", "--data-dir", str(data))
    assert code == 0
    assert out.startswith("ok: 5 record(s), chain intact up to seq 5")


def test_verify_fails_naming_the_first_bad_record(data: Path) -> None:
    tamper.edit_payload(data / DB_NAME, 3, lambda p: p.update(principal="mallory"))
    code, out, err = steward("audit", "verify", "--data-dir", str(data))
    assert code == 1 and out == ""
    assert "record seq 3: edited — its content does not match its hash" in err
    code, out, _ = steward("audit", "verify", "--data-dir", str(data), "--json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    assert report["problems"][0] == {
        "seq": 3,
        "problem": "edited",
        "message": report["problems"][0]["message"],
    }


def test_verify_checks_hmacs_with_the_key_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "s3cret")
    with AuditLog.open(tmp_path, clock=FakeClock()) as log:
        log.write_intent(intent("d-1"))
        log.write_outcome(outcome("d-1"))
    code, out, _ = steward("audit", "verify", "--data-dir", str(tmp_path))
    assert code == 0 and "every record's HMAC checked" in out
    tamper.reforge(tmp_path / DB_NAME, 1, lambda p: p.update(rationale="forged"))
    code, _, err = steward("audit", "verify", "--data-dir", str(tmp_path))
    assert code == 1 and "record seq 1: bad_hmac — its HMAC does not match" in err


def test_verify_without_a_log_is_bad_input(tmp_path: Path) -> None:
    code, _, err = steward("audit", "verify", "--data-dir", str(tmp_path))
    assert code == 2 and "no decision log at" in err


def test_show_lists_records_and_filters_them(data: Path) -> None:
    code, out, _ = steward("audit", "show", "--data-dir", str(data))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 5
    assert "approval" in lines[2] and "U024BE7LH (alice) approved action 2 via slack" in lines[2]
    code, out, _ = steward("audit", "show", "--data-dir", str(data), "--kind", "intent", "--json")
    assert code == 0 and [r["seq"] for r in json.loads(out)] == [2, 5]
    code, out, _ = steward(
        "audit", "show", "--data-dir", str(data), "--since", "2026-11-30T09:00:03", "--json"
    )
    assert [r["seq"] for r in json.loads(out)] == [4, 5]


def test_an_age_counts_back_in_the_logs_own_clock(data: Path) -> None:
    """The fixture's log was written on a clock of 2026-11-30 09:00: an age is counted back from
    its last record, not from the wall clock (a simulated day in the past still answers)."""
    code, out, _ = steward("audit", "show", "--data-dir", str(data), "--since", "2s", "--json")
    assert code == 0 and [r["seq"] for r in json.loads(out)] == [3, 4, 5]


def test_show_refuses_an_unknown_kind_and_a_bad_time(data: Path) -> None:
    code, _, err = steward("audit", "show", "--data-dir", str(data), "--kind", "intnet")
    assert code == 2 and "--kind 'intnet' is not a record kind" in err
    code, _, err = steward("audit", "show", "--data-dir", str(data), "--since", "yesterday")
    assert code == 2 and "give an ISO time" in err


def test_explain_tells_the_whole_story(data: Path) -> None:
    code, out, _ = steward("audit", "explain", "d-1", "--data-dir", str(data))
    assert code == 0
    for line in (
        "Decision d-1 — completed (seq 2, 2026-11-30 09:00:01 UTC)",
        "Seen: the cluster as observed at 2026-11-30 09:00:00 (digest abababababab).",
        "  signals: burst-llm.queue_depth=14, render.idle_min=42.5, slo_breach=True",
        "Planned by: llm (model qwen3-32b).",
        "  1. scale burst-llm to 2 replica(s) — allowed by pools.burst.max_cards",
        "  2. rotate to mode cluster — needs approval by approval.rotate_mode.working_hours",
        "     approved by U024BE7LH (alice) via slack at 2026-11-30 09:02",
        "  3. drain render-1 (deadline 300 s) — denied by protected.render",
        "     not run: denied by protected.render",
        "What happened: 2 of 3 action(s) ran; completed.",
        "  check burst-llm ready: ok 2/2 replicas",
    ):
        assert line in out.splitlines()


def test_explain_by_seq_and_as_json(data: Path) -> None:
    code, out, _ = steward("audit", "explain", "5", "--data-dir", str(data), "--json")
    explanation = json.loads(out)
    assert (
        code == 0
        and explanation["decision_id"] == "d-2"
        and explanation["status"] == "waiting for approval"
    )
    code, out, _ = steward("audit", "explain", "1", "--data-dir", str(data))
    assert code == 0 and out.startswith("seq 1 (startup): steward 0.1.0 started")
    code, _, err = steward("audit", "explain", "d-nope", "--data-dir", str(data))
    assert code == 2 and "no decision 'd-nope'" in err


def test_export_writes_one_object_per_line_with_actions_joined(data: Path) -> None:
    code, out, _ = steward("audit", "export", "--format", "jsonl", "--data-dir", str(data))
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
    for row in rows:
        assert {"seq", "time", "kind", "prev_hash", "hash", "planner", "model", "actions"} <= set(
            row
        )
    assert rows[1]["prev_hash"] == rows[0]["hash"]
    intent_row, outcome_row, open_row = rows[1], rows[3], rows[4]
    assert (intent_row["planner"], intent_row["model"]) == ("llm", "qwen3-32b")
    assert intent_row["actions"] == outcome_row["actions"]
    assert intent_row["actions"][0] == {
        "index": 0,
        "type": "scale_workload",
        "target": "burst-llm",
        "params": {"workload": "burst-llm", "replicas": 2},
        "reason": "queue above SLO",
        "verdict": "allow",
        "rule_ids": ["pools.burst.max_cards"],
        "executed": True,
        "ok": True,
        "outcome": "scaled to 2",
    }
    assert [a["executed"] for a in intent_row["actions"]] == [True, True, False]
    assert [a["verdict"] for a in open_row["actions"]] == ["allow", "needs_approval", "deny"]
    assert {a["executed"] for a in open_row["actions"]} == {False}


def test_bench_audit_prints_its_figures(tmp_path: Path) -> None:
    code, out, _ = steward(
        "bench", "audit", "--runs", "10", "--records", "400", "--data-dir", str(tmp_path), "--json"
    )
    figures = json.loads(out)
    assert {"median_ms", "p99_ms", "verify_s", "verify_records", "met"} <= set(figures)
    assert figures["verify_records"] == 400
    assert code == (0 if figures["met"] else 1)
    assert list(tmp_path.iterdir()) == []
