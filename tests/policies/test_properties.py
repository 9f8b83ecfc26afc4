"""Nothing gets past the engine: generated states, policies, histories and plans — absurd ones
included — and every plan it lets through, applied, keeps every invariant.

Each example judges ten plans (strategies.PLANS_PER_CASE), so max_examples=1000 judges 10,000
generated plans per run.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from policies.engine import judge
from policies.model import Policy
from tests.policies.invariants import check_applied
from tests.policies.strategies import scenario
from tools.actions import NoOp, Plan

KNOWN = {"allow", "deny", "needs_approval"}


@settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario())
def test_no_allowed_plan_breaks_an_invariant(case: dict[str, Any]) -> None:
    state, policy, history, now = case["state"], case["policy"], case["history"], case["now"]
    for plan in case["plans"]:
        judgement = judge(plan, state, policy, history, now)
        assert len(judgement.verdicts) == len(plan.actions)
        for index, (action, verdict) in enumerate(zip(plan.actions, judgement.verdicts,
                                                      strict=True)):  # fmt: skip
            assert verdict.index == index and verdict.action is action
            assert verdict.decision in KNOWN and verdict.rule_ids and verdict.message
            if isinstance(action, NoOp):
                assert verdict.decision == "allow"
            if verdict.decision == "needs_approval":
                assert verdict.approvers
                assert all(policy.approvers.groups[g] for g in verdict.approvers)
            if verdict.allowed_instead is not None:
                _alternative_passes(plan, index, verdict.allowed_instead, case)
        allowed = [v.action for v in judgement.verdicts if v.decision == "allow"]
        waiting = [v.action for v in judgement.verdicts if v.decision != "deny"]
        for subset in (allowed, waiting):
            broken = check_applied(subset, state, policy, history, now)
            assert not broken, (broken, plan, judgement.verdicts)
        _no_allowed_action_skips_an_approval(judgement.verdicts, state, policy, now)


def _alternative_passes(plan: Plan, index: int, instead: Any, case: dict[str, Any]) -> None:
    actions = list(plan.actions)
    actions[index] = instead
    again = judge(Plan(actions=tuple(actions)), case["state"], case["policy"], case["history"],
                  case["now"])  # fmt: skip
    assert again.verdicts[index].decision != "deny", again.verdicts[index]


def _no_allowed_action_skips_an_approval(verdicts: Any, state: Any, policy: Policy, now: Any):
    local = policy.local(now)
    for verdict in verdicts:
        if verdict.decision != "allow" or isinstance(verdict.action, NoOp):
            continue
        for rule in policy.approval_rules_for(verdict.action, state):
            assert rule.window is not None and not rule.window.contains(local), (rule, verdict)


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(scenario())
def test_judging_is_deterministic(case: dict[str, Any]) -> None:
    for plan in case["plans"]:
        first = judge(plan, case["state"], case["policy"], case["history"], case["now"])
        second = judge(plan, case["state"], case["policy"], case["history"], case["now"])
        assert first.verdicts == second.verdicts and first.findings == second.findings
