"""A decision is an intent before anything runs and an outcome after; the log keeps them honest."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from agent.audit import (
    ActionOutcome,
    AuditError,
    AuditLog,
    DryRunPlan,
    Fallback,
    Intent,
    Interrupted,
    ModeStep,
    Outcome,
    Proposal,
    explain,
    proposals,
    render,
)
from policies.history import Executed, History
from policies.judgement import Verdict
from tests.audit.builders import T0, FakeClock, approval, intent, outcome
from tools.actions import Plan, ScaleWorkload
from tools.backends.base import ActionResult


def test_records_chain_in_order_and_survive_reopening(tmp_path: Path, clock: FakeClock) -> None:
    with AuditLog.open(tmp_path, clock=clock) as log:
        first = log.write_intent(intent("d-1"))
        second = log.write_outcome(outcome("d-1"))
    assert (first.seq, second.seq) == (1, 2)
    assert second.prev_hash == first.hash
    with AuditLog.open(tmp_path, readonly=True) as reader:
        again = reader.records()
    assert [r.hash for r in again] == [first.hash, second.hash]
    assert again[0].payload == intent("d-1")
    assert again[1].time == T0 + timedelta(seconds=1)


def test_an_outcome_needs_its_intent_first(log: AuditLog) -> None:
    with pytest.raises(AuditError, match="holds no intent for it; write_intent\\(\\) must come"):
        log.write_outcome(outcome("d-unknown"))
    assert log.records() == []


def test_a_decision_gets_one_outcome_only(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    log.write_outcome(outcome("d-1"))
    with pytest.raises(AuditError, match="closed as outcome at seq 2"):
        log.write_outcome(outcome("d-1"))


def test_a_decision_id_is_used_once(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    with pytest.raises(AuditError, match="already has an intent"):
        log.write_intent(intent("d-1"))


def test_an_outcome_cannot_report_an_action_that_was_not_proposed(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    bad = Outcome(decision_id="d-1", results=(ActionOutcome.skipped(7, "no such action"),))
    with pytest.raises(AuditError, match="reports action 7, but its intent proposed 3"):
        log.write_outcome(bad)


def test_approvals_answer_only_actions_that_wait_for_one(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    assert intent("d-1").approvals_pending == (1,)
    log.write_approval(approval("d-1"))
    wrong = approval("d-1").model_copy(update={"action_index": 0})
    with pytest.raises(AuditError, match="does not wait for approval \\(pending: \\[1\\]\\)"):
        log.write_approval(wrong)


def test_proposals_pair_a_plan_with_its_verdicts() -> None:
    plan = Plan(actions=(ScaleWorkload(workload="tts", replicas=0, reason="idle"),))
    verdict = Verdict(
        index=0,
        action=plan.actions[0],
        decision="needs_approval",
        rule_ids=("approval.scale_to_zero",),
        message="Needs approval by owners",
        approvers=("owners",),
    )
    paired = proposals(plan, [verdict])
    assert paired == (
        Proposal(
            action=plan.actions[0],
            verdict="needs_approval",
            rule_ids=("approval.scale_to_zero",),
            message="Needs approval by owners",
            approvers=("owners",),
        ),
    )
    with pytest.raises(ValueError, match="1 action\\(s\\) but 0 verdict\\(s\\)"):
        proposals(plan, [])


def test_backend_results_become_outcomes() -> None:
    result = ActionResult(ok=True, dry_run=False, message="scaled", changed=True)
    assert ActionOutcome.from_result(0, result) == ActionOutcome(
        index=0, executed=True, ok=True, changed=True, message="scaled"
    )


def test_reconcile_closes_intents_left_without_an_outcome(log: AuditLog) -> None:
    log.write_intent(intent("d-done"))
    log.write_outcome(outcome("d-done"))
    log.write_intent(intent("d-crashed"))
    log.write_intent(intent("d-awaiting-approval"))
    assert [r.decision_id for r in log.unfinished_intents()] == [
        "d-crashed",
        "d-awaiting-approval",
    ]
    assert log.reconcile(keep={"d-awaiting-approval"}) == ["d-crashed"]
    closing = log.records(kind="interrupted")
    assert [r.payload for r in closing] == [
        Interrupted(
            decision_id="d-crashed",
            intent_seq=3,
            reason="the process stopped between intent and outcome; re-observe before acting",
        )
    ]
    assert log.reconcile(keep={"d-awaiting-approval"}) == []
    with pytest.raises(AuditError, match="closed as interrupted at seq 5; re-observe"):
        log.write_outcome(outcome("d-crashed"))
    assert log.verify().ok


def test_executed_actions_feed_the_policy_history(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    log.write_outcome(outcome("d-1"))
    log.write_intent(intent("d-2"))
    log.reconcile()
    done = log.executed_actions(since=T0)
    assert [(e.action.type, e.decision_id, e.ok) for e in done] == [
        ("scale_workload", "d-1", True),
        ("rotate_mode", "d-1", True),
    ]
    assert done[0].at == T0 + timedelta(seconds=1)
    assert log.executed_actions(since=T0 + timedelta(seconds=2)) == []
    history = History.of(Executed(at=e.at, action=e.action) for e in done if e.ok)
    assert [x.action for x in history.executed] == [e.action for e in done]


def test_records_filter_by_time_kind_and_decision(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    log.append(Fallback(decision_id="d-2", from_planner="llm", model="qwen3-32b", reason="timeout"))
    log.write_intent(intent("d-2"))
    log.write_outcome(outcome("d-2"))
    assert [r.seq for r in log.records(kind="intent")] == [1, 3]
    assert [r.seq for r in log.records(since=T0 + timedelta(seconds=2))] == [3, 4]
    assert [r.seq for r in log.records(decision_id="d-2")] == [2, 3, 4]
    assert [r.seq for r in log.records(limit=2)] == [3, 4]
    assert log.record(2) is not None and log.record(99) is None


def test_a_batch_is_written_whole_or_not_at_all(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))

    def refuse(conn: object) -> None:
        raise AuditError("refused by the precondition")

    with pytest.raises(AuditError, match="refused by the precondition"):
        log.append_batch([approval("d-1"), outcome("d-1")], refuse)
    assert len(log.records()) == 1
    assert log.write_outcome(outcome("d-1")).seq == 2
    assert log.verify().ok


def test_timestamps_without_a_zone_are_refused(tmp_path: Path) -> None:
    with (
        AuditLog.open(tmp_path, clock=lambda: T0.replace(tzinfo=None)) as log,
        pytest.raises(ValueError, match="has no time zone"),
    ):
        log.write_intent(intent("d-1"))


def test_approvals_pending_must_point_at_proposals() -> None:
    with pytest.raises(ValueError, match="approvals_pending holds 5, but there are 3 proposals"):
        Intent.model_validate({**intent("d-1").model_dump(), "approvals_pending": (5,)})


def test_the_story_of_a_rotation_lists_its_journal_steps(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    for step, status in (
        ("drain", "done"),
        ("switch", "done"),
        ("probe", "ok"),
        ("commit", "done"),
    ):
        log.append(
            ModeStep(
                rotation_id="r-7",
                step=step,
                status=status,
                target_mode="cluster",
                decision_id="d-1",
            )
        )
    log.write_outcome(outcome("d-1"))
    explanation = explain(log.decision("d-1"))
    assert explanation.mode_steps == (
        "rotation r-7 to cluster: drain done (09:00:01)",
        "rotation r-7 to cluster: switch done (09:00:02)",
        "rotation r-7 to cluster: probe ok (09:00:03)",
        "rotation r-7 to cluster: commit done (09:00:04)",
    )
    assert "  rotation r-7 to cluster: commit done (09:00:04)" in render(explanation).splitlines()


def test_the_story_shows_signals_readably(log: AuditLog) -> None:
    signals = {
        "idle_cards": 5,
        "favoured_mode": None,
        "stale_metrics": [],
        "findings": ["burst-llm: idle for 300 s", "render: idle"],
        "workloads": [{"workload": "tts"}, {"workload": "render"}],
    }
    log.write_intent(intent("d-1").model_copy(update={"signals": signals}))
    text = render(explain(log.decision("d-1"))).splitlines()
    assert text[3:6] == [
        "  signals: idle_cards=5",
        "  findings: burst-llm: idle for 300 s; render: idle",
        "  workloads: 2 entries (`--json` shows them)",
    ]


def test_the_story_of_an_interrupted_decision_says_so(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    log.reconcile()
    explanation = explain(log.decision("d-1"))
    assert explanation.status == "interrupted"
    assert render(explanation).splitlines()[-1] == (
        "What happened: interrupted — the process stopped between intent and outcome; "
        "re-observe before acting."
    )


def test_the_story_of_a_failed_action_and_of_a_dry_run(log: AuditLog) -> None:
    log.write_intent(intent("d-1"))
    failed = ActionOutcome(index=0, executed=True, ok=False, message="API server said 409")
    log.write_outcome(Outcome(decision_id="d-1", results=(failed,)))
    explanation = explain(log.decision("d-1"))
    assert explanation.status == "failed"
    assert "     ran: FAILED — API server said 409" in render(explanation).splitlines()
    plan = DryRunPlan.model_validate(intent("d-2").model_dump(exclude={"kind"}))
    log.append(plan)
    dry = explain(log.decision("d-2"))
    assert dry.status == "dry run"
    assert render(dry).splitlines()[-1] == "What happened: nothing — a dry-run plan."
