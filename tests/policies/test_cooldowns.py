"""Cooldowns per action type and per target, from the executed history; duplicates in a plan."""

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
from tools.actions import CordonNode, DrainNode, ScaleWorkload, UncordonNode

SCALE_WORKER = ScaleWorkload(workload="worker", replicas=0)


def done(*entries: tuple[timedelta, object]) -> History:
    history = History()
    for ago, action in entries:
        history = history.record(action, NIGHT - ago)  # type: ignore[arg-type]
    return history


@pytest.mark.parametrize(
    ("history", "decision"),
    [
        (done((timedelta(minutes=1), ScaleWorkload(workload="worker", replicas=1))), "deny"),
        (done((timedelta(minutes=2), ScaleWorkload(workload="worker", replicas=1))), "allow"),
        # another workload's scale does not cool this one
        (done((timedelta(seconds=5), ScaleWorkload(workload="render", replicas=1))), "allow"),
        # a clock that went back: an action stamped in the future counts as just done
        (done((-timedelta(minutes=30), ScaleWorkload(workload="worker", replicas=1))), "deny"),
    ],
)
def test_scale_cooldown_is_per_workload(history, decision) -> None:
    verdict = run(SCALE_WORKER, history=history).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if decision == "deny":
        assert verdict.rule_ids == ("cooldown.scale_workload",)
        assert "allowed again from" in verdict.message


def test_a_target_cooldown_spaces_any_two_actions_on_it() -> None:
    base = default_policy()
    policy = replace(
        base, cooldowns=replace(base.cooldowns, by_target={"ws-1": timedelta(hours=1)})
    )
    history = done((timedelta(minutes=20), CordonNode(node="ws-1")))
    verdict = run(UncordonNode(node="ws-1"), policy=policy, history=history).verdicts[0]
    assert verdict.rule_ids == ("cooldown.target",)


def test_two_actions_on_one_thing_in_one_plan_are_refused() -> None:
    ungated = without_approvals(*NODES_UNGATED)
    judgement = run(CordonNode(node="render-1"), DrainNode(node="render-1"), policy=ungated)
    assert judgement.verdicts[0].decision == "allow"
    second = judgement.verdicts[1]
    assert second.decision == "deny" and "plan.duplicate_target" in second.rule_ids
    assert any(f.rule_id == "plan.duplicate_target" and f.actions == (0, 1)
               for f in judgement.findings)  # fmt: skip


def test_the_same_action_twice_is_a_duplicate() -> None:
    judgement = run(SCALE_WORKER, SCALE_WORKER)
    assert [v.decision for v in judgement.verdicts] == ["allow", "deny"]
