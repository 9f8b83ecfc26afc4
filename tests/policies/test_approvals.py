"""Approval rules and who may approve: Policy.may_approve, used by `steward approve` and Slack."""

from __future__ import annotations

from datetime import time

import pytest

from policies.model import ApprovalRule, Approvers, Group, Window
from tests.policies.builders import DAY, NIGHT, default_policy, homelab, run
from tools.actions import DrainNode, RotateMode, ScaleWorkload

SPLIT = RotateMode(target_mode="split")


@pytest.mark.parametrize(
    ("action", "now", "decision", "rule"),
    [
        (SPLIT, DAY, "needs_approval", "approval.rotate_working_hours"),  # 11:00 Madrid
        (SPLIT, NIGHT, "allow", None),  # 03:00 Madrid
        (DrainNode(node="render-1"), NIGHT, "needs_approval", "approval.drain_any_node"),
        (ScaleWorkload(workload="worker", replicas=0), DAY, "allow", None),
    ],
)
def test_approval_rules(action, now, decision, rule) -> None:
    verdict = run(action, state=homelab(at=now)).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if rule:
        assert verdict.rule_ids == (rule,)


def test_a_verdict_waiting_for_approval_names_who_may_give_it() -> None:
    verdict = run(SPLIT, state=homelab(at=DAY)).verdicts[0]
    assert verdict.approvers == ("owners",)
    assert "Needs approval by owners under rotate_working_hours (08:00-20:00)" in verdict.message


def test_the_working_hours_end_at_eight_in_the_evening_local_time() -> None:
    evening = DAY.replace(hour=19)  # 20:00 Madrid
    assert run(SPLIT, state=homelab(at=evening)).verdicts[0].decision == "allow"
    assert (
        run(SPLIT, state=homelab(at=evening.replace(hour=18, minute=59))).verdicts[0].decision
        == "needs_approval"
    )


def test_a_denied_action_is_not_sent_for_approval() -> None:
    verdict = run(DrainNode(node="ws-1")).verdicts[0]  # tts is protected
    assert verdict.decision == "deny"


POLICY = default_policy(
    approvals=(
        ApprovalRule(name="rotate_by_day", actions=("rotate_mode",),
                     window=Window(start=time(8), end=time(20)), approvers=("owners",)),
        ApprovalRule(name="render_to_zero", actions=("scale_workload",), pools=("render",),
                     direction="to_zero", approvers=("operators",)),
    ),
    approvers=Approvers(groups={"owners": Group(members=("ana",)),
                                "operators": Group(members=("ben", "ana"))}),
)  # fmt: skip


@pytest.mark.parametrize(
    ("principal", "action", "with_state", "may"),
    [
        ("ana", SPLIT, False, True),
        ("ben", SPLIT, False, False),  # not an owner
        ("mallory", SPLIT, True, False),
        ("ben", ScaleWorkload(workload="render", replicas=0), True, True),
        # without the state the pool and direction cannot be read: filtered rules never match
        ("ben", ScaleWorkload(workload="render", replicas=0), False, False),
        # a scale-up of render is not covered by the to_zero rule
        ("ben", ScaleWorkload(workload="render", replicas=2), True, False),
        ("ben", ScaleWorkload(workload="worker", replicas=0), True, False),  # other pool
    ],
)
def test_may_approve(principal, action, with_state, may) -> None:
    state = homelab() if with_state else None
    assert POLICY.may_approve(principal, action, state) is may


def test_direction_and_pool_filters_choose_what_needs_approval() -> None:
    policy = POLICY
    state = homelab(render_util=0.0)
    from datetime import timedelta

    from tests.policies.builders import watched

    history = watched(state, policy, timedelta(hours=1))
    to_zero = run(ScaleWorkload(workload="render", replicas=0), state=state, policy=policy,
                  history=history).verdicts[0]  # fmt: skip
    assert to_zero.decision == "needs_approval"
    assert to_zero.rule_ids == ("approval.render_to_zero",)
    assert to_zero.approvers == ("operators",)
