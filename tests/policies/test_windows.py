"""Quiet hours and maintenance windows, in the policy's local time zone."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from policies.model import QuietWindow
from tests.policies.builders import (
    NODES_UNGATED,
    default_policy,
    homelab,
    run,
    with_workload,
    without_approvals,
)
from tools.actions import CordonNode, NoOp, ScaleWorkload, UncordonNode

NIGHTS = QuietWindow(name="quiet_hours", start=time(22), end=time(7), allow="scale_up_only")
FREEZE = QuietWindow(name="freeze", start=time(9), end=time(10), days=("tue",), allow="nothing")
# The windows alone: no cordon or uncordon waits for a person here.
POLICY = without_approvals(*NODES_UNGATED).model_copy(update={"windows": (NIGHTS, FREEZE)})
STATE = with_workload(homelab(), "render", desired_replicas=0, ready_replicas=0, placement=())
UP = ScaleWorkload(workload="burst-llm", replicas=1)
DOWN = ScaleWorkload(workload="worker", replicas=0)


def at(text: str) -> datetime:
    """A UTC instant; Madrid is UTC+1 in March."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("when", "action", "decision"),
    [
        ("2026-03-02T22:30", DOWN, "deny"),  # 23:30 local: quiet
        ("2026-03-02T22:30", UP, "allow"),
        ("2026-03-02T22:30", UncordonNode(node="render-1"), "allow"),  # adds capacity
        ("2026-03-02T22:30", CordonNode(node="render-1"), "deny"),
        ("2026-03-03T05:30", DOWN, "deny"),  # 06:30 local next day: still the same night
        ("2026-03-03T06:00", DOWN, "allow"),  # 07:00 local: over
        ("2026-03-03T20:59", DOWN, "allow"),  # 21:59 local
        ("2026-03-03T08:30", UP, "deny"),  # Tuesday 09:30 local: frozen
        ("2026-03-02T08:30", UP, "allow"),  # Monday 09:30: not frozen
        ("2026-03-03T08:30", NoOp(reason="frozen"), "allow"),
    ],
)
def test_windows(when, action, decision) -> None:
    verdict = run(action, state=STATE, policy=POLICY, now=at(when)).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if decision == "deny":
        assert verdict.rule_ids[0].startswith("window.")


def test_the_denial_names_the_window() -> None:
    verdict = run(DOWN, state=STATE, policy=POLICY, now=at("2026-03-02T22:30")).verdicts[0]
    assert verdict.message == "Denied: quiet_hours (22:00-07:00): only scale-ups now."


def test_a_window_from_midnight_to_midnight_is_the_whole_day() -> None:
    weekend = QuietWindow(name="weekend", start=time(0), end=time(0), days=("sat", "sun"),
                          allow="scale_up_only")  # fmt: skip
    policy = default_policy(windows=(weekend,))
    saturday_late = at("2026-03-07T22:59")  # 23:59 Madrid
    assert run(DOWN, policy=policy, now=saturday_late).verdicts[0].decision == "deny"
    assert run(DOWN, policy=policy, now=at("2026-03-08T23:30")).verdicts[0].decision == "allow"
