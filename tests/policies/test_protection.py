"""Protected workloads: never scaled below their current replicas, their nodes never drained."""

from __future__ import annotations

import pytest

from tests.policies.builders import default_policy, homelab, run, with_workload
from tools.actions import DrainNode, RotateMode, ScaleWorkload


@pytest.mark.parametrize(
    ("action", "decision", "rule"),
    [
        (ScaleWorkload(workload="tts", replicas=0), "deny", "protected.never_below_current"),
        (DrainNode(node="ws-1"), "deny", "protected.never_drained"),
        (ScaleWorkload(workload="tts", replicas=1), "allow", None),
        # render-1 holds nothing protected: a drain only needs the owners' approval
        (DrainNode(node="render-1"), "needs_approval", "approval.drain_any_node"),
    ],
)
def test_protected_workloads(action, decision, rule) -> None:
    verdict = run(action).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if rule:
        assert rule in verdict.rule_ids


def test_a_protected_workload_may_grow() -> None:
    state = with_workload(homelab(), "worker", desired_replicas=0, ready_replicas=0, placement=())
    assert run(ScaleWorkload(workload="tts", replicas=2), state=state).all_allowed


def test_a_rotation_that_would_stop_a_protected_workload_is_denied() -> None:
    policy = default_policy(protected=("beast",))
    verdict = run(RotateMode(target_mode="split"), policy=policy).verdicts[0]
    assert verdict.decision == "deny"
    assert "protected.never_below_current" in verdict.rule_ids
