"""Unknown targets and malformed actions are denied; NoOp is always allowed."""

from __future__ import annotations

from datetime import time, timedelta

import pytest

from policies.history import History
from policies.model import QuietWindow
from tests.policies.builders import NIGHT, default_policy, homelab, run, with_workload
from tools.actions import (
    CordonNode,
    DrainNode,
    NoOp,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
)


@pytest.mark.parametrize(
    ("action", "rule"),
    [
        (ScaleWorkload(workload="ghost", replicas=1), "target.unknown"),
        (PlaceReplica(workload="burst-llm", node="nowhere"), "target.unknown"),
        (PlaceReplica(workload="burst-llm", node="render-1", gpus=("GPU-ws",)), "target.unknown"),
        (CordonNode(node="nowhere"), "target.unknown"),
        (DrainNode(node="nowhere"), "target.unknown"),
        (RotateMode(target_mode="turbo"), "target.unknown"),
        # a hostile planner bypassing validation
        (ScaleWorkload.model_construct(workload="render", replicas=-3), "action.invalid"),
        (ScaleWorkload.model_construct(workload="render", replicas=2.5), "action.invalid"),
        (ScaleWorkload.model_construct(workload="render", replicas=True), "action.invalid"),
        (ScaleWorkload.model_construct(workload=None, replicas=1), "target.unknown"),
        (DrainNode.model_construct(node="render-1", deadline_s=-1.0), "action.invalid"),
    ],
)
def test_what_cannot_be_understood_is_denied(action, rule) -> None:
    verdict = run(action).verdicts[0]
    assert verdict.decision == "deny"
    assert verdict.rule_ids == (rule,)
    assert verdict.allowed_instead is None


def test_a_huge_scale_is_denied_with_what_would_pass() -> None:
    state = with_workload(homelab(), "render", desired_replicas=0, ready_replicas=0, placement=())
    verdict = run(ScaleWorkload(workload="burst-llm", replicas=3 * 10**15), state=state).verdicts[0]
    assert verdict.decision == "deny"
    assert verdict.allowed_instead == ScaleWorkload(workload="burst-llm", replicas=2)


def test_a_workload_of_a_pool_without_policy_is_denied() -> None:
    state = with_workload(homelab(), "worker", pool="shadow")
    verdict = run(ScaleWorkload(workload="worker", replicas=0), state=state).verdicts[0]
    assert verdict.rule_ids == ("pool.unmanaged",)


def test_a_mode_whose_workload_is_not_deployed_is_unknown() -> None:
    from tests.policies.builders import replace

    state = homelab()
    state = replace(state, workloads=tuple(w for w in state.workloads if w.name != "resident-a"))
    verdict = run(RotateMode(target_mode="split"), state=state).verdicts[0]
    assert verdict.rule_ids == ("target.unknown",)
    assert "resident-a" in verdict.message


def test_noop_is_always_allowed() -> None:
    freeze = QuietWindow(name="freeze", start=time(0), end=time(0), allow="nothing")
    policy = default_policy(windows=(freeze,))
    history = History()
    for i in range(30):
        history = history.record(CordonNode(node=f"n{i}"), NIGHT - timedelta(minutes=i))
    verdict = run(NoOp(reason="nothing to do"), policy=policy, history=history).verdicts[0]
    assert verdict.decision == "allow"
    assert verdict.rule_ids == ("noop.always_allowed",)
