"""The change budget: actions per sliding hour and cards per plan (the blast radius)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from policies.history import History
from tests.policies.builders import (
    NIGHT,
    NODES_UNGATED,
    default_policy,
    replace,
    run,
    without_approvals,
)
from tools.actions import CordonNode, NoOp, RotateMode, ScaleWorkload, UncordonNode


def busy_hour(count: int, spread: timedelta = timedelta(minutes=59)) -> History:
    """`count` cordon/uncordon actions on a far node over the last `spread`."""
    history = History()
    for i in range(count):
        action = CordonNode(node=f"old-{i}") if i % 2 else UncordonNode(node=f"old-{i}")
        history = history.record(action, NIGHT - spread + spread * i / max(count, 1))
    return history


@pytest.mark.parametrize(("done", "allowed"), [(0, 3), (10, 2), (11, 1), (12, 0), (40, 0)])
def test_at_most_twelve_actions_an_hour(done, allowed) -> None:
    plan = (
        CordonNode(node="render-1"),
        ScaleWorkload(workload="worker", replicas=0),
        CordonNode(node="gx10-a"),
    )
    # Cordons are the cheapest actions to count here: none waits for a person in this test.
    judgement = run(*plan, history=busy_hour(done), policy=without_approvals(*NODES_UNGATED))
    decisions = [v.decision for v in judgement.verdicts]
    assert decisions == ["allow"] * allowed + ["deny"] * (3 - allowed)
    for verdict in judgement.verdicts[allowed:]:
        assert verdict.rule_ids == ("budget.actions_per_hour",)
        assert "at most 12 actions per hour" in verdict.message


def test_the_next_slot_is_named() -> None:
    history = busy_hour(12, spread=timedelta(minutes=50))
    verdict = run(CordonNode(node="render-1"), history=history).verdicts[0]
    # the oldest of the 12 was at 01:10 UTC (02:10 Madrid): a slot opens an hour later
    assert "the next slot opens at 03:10 CET" in verdict.message  # local times carry their zone


def test_actions_older_than_an_hour_do_not_count() -> None:
    history = busy_hour(12, spread=timedelta(minutes=59)).record(
        CordonNode(node="x"), NIGHT - timedelta(hours=3)
    )
    assert run(NoOp(reason="wait"), history=history).all_allowed
    verdict = run(CordonNode(node="render-1"), history=history).verdicts[0]
    assert verdict.decision == "deny"


def test_noops_are_free() -> None:
    assert run(NoOp(reason="nothing to do"), history=busy_hour(50)).all_allowed


def test_the_blast_radius_caps_cards_changed_per_plan() -> None:
    policy = default_policy(change_budget=replace(default_policy().change_budget, cards_per_tick=2))
    judgement = run(
        RotateMode(target_mode="split"),  # moves 2 cards
        ScaleWorkload(workload="worker", replicas=0),  # 1 more: over
        policy=policy,
    )
    assert [v.decision for v in judgement.verdicts] == ["allow", "deny"]
    assert judgement.verdicts[1].rule_ids == ("plan.blast_radius",)
    assert any(f.rule_id == "plan.blast_radius" and f.actions == (1,) for f in judgement.findings)


def test_a_scale_beyond_the_blast_radius_is_offered_within_it() -> None:
    policy = default_policy(
        change_budget=replace(default_policy().change_budget, cards_per_tick=1),
        budget=replace(default_policy().budget, total_cards=None),
    )
    from tests.policies.builders import homelab, with_workload

    state = with_workload(homelab(), "render", desired_replicas=0, ready_replicas=0, placement=())
    verdict = run(ScaleWorkload(workload="burst-llm", replicas=2), state=state,
                  policy=policy).verdicts[0]  # fmt: skip
    assert verdict.rule_ids == ("plan.blast_radius",)
    assert verdict.allowed_instead == ScaleWorkload(workload="burst-llm", replicas=1)
