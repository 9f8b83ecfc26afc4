"""Capacity moves only by the policy's word: under the default policy a cordon needs a person,
an uncordon too unless Steward itself made the cordon, and a model's scale-down of a protected
or serving workload waits for a person — whatever the model read."""

from __future__ import annotations

import pytest

from policies.engine import judge
from policies.history import History
from tests.policies.builders import NIGHT, default_policy, homelab, run, with_node
from tools.actions import Action, CordonNode, Plan, ScaleWorkload, UncordonNode


def _by_model(*actions: Action) -> Plan:
    return Plan(actions=actions, planner="llm", model="any-model")


@pytest.mark.parametrize("node", ["render-1", "gx10-a"])
def test_a_cordon_needs_a_person(node: str) -> None:
    verdict = run(CordonNode(node=node)).verdicts[0]

    assert verdict.decision == "needs_approval", verdict.message
    assert "approval.cordon_any_node" in verdict.rule_ids
    assert verdict.approvers == ("owners",)


def test_no_cordon_is_allowed_without_a_person() -> None:
    verdicts = [run(CordonNode(node=n.name)).verdicts[0] for n in homelab().nodes]

    assert [v.decision for v in verdicts if v.decision == "allow"] == []


def test_an_uncordon_of_a_persons_cordon_needs_a_person() -> None:
    state = with_node(homelab(), "ws-1", cordoned=True, cordoned_by_steward=False)

    verdict = run(UncordonNode(node="ws-1"), state=state).verdicts[0]

    assert verdict.decision == "needs_approval", verdict.message
    assert verdict.rule_ids == ("approval.uncordon_not_own",)


def test_steward_lifts_its_own_cordon_without_asking() -> None:
    state = with_node(homelab(), "render-1", cordoned=True, cordoned_by_steward=True)

    verdict = run(UncordonNode(node="render-1"), state=state).verdicts[0]

    assert verdict.decision == "allow", verdict.message


@pytest.mark.parametrize("workload", ["worker", "tts", "beast"])
def test_a_models_scale_down_of_what_serves_never_runs_on_its_word(workload: str) -> None:
    plan = _by_model(ScaleWorkload(workload=workload, replicas=0))

    verdict = judge(plan, homelab(), default_policy(), History(), NIGHT).verdicts[0]

    assert verdict.decision in ("needs_approval", "deny"), verdict.message
    if verdict.decision == "needs_approval":
        assert "approval.model_scale_down" in verdict.rule_ids


def test_the_same_scale_down_by_the_rules_planner_needs_nobody() -> None:
    action = ScaleWorkload(workload="worker", replicas=0)

    by_rules = run(action).verdicts[0]
    by_model = judge(_by_model(action), homelab(), default_policy(), History(), NIGHT).verdicts[0]

    assert by_rules.decision == "allow", by_rules.message
    assert by_model.decision == "needs_approval", by_model.message
    assert by_model.rule_ids == ("approval.model_scale_down",)


def test_a_models_scale_down_of_a_pool_that_serves_nobody_is_judged_as_anyones() -> None:
    action = ScaleWorkload(workload="render", replicas=0)  # render keeps no ready replica

    by_model = judge(_by_model(action), homelab(), default_policy(), History(), NIGHT).verdicts[0]

    assert "approval.model_scale_down" not in by_model.rule_ids


def test_an_approver_of_the_default_policy_may_approve_each_of_them() -> None:
    policy = default_policy()
    state = with_node(homelab(), "ws-1", cordoned=True)

    for action in (
        CordonNode(node="render-1"),
        UncordonNode(node="ws-1"),
        ScaleWorkload(workload="worker", replicas=0),
    ):
        assert policy.may_approve("homelab-owner", action, state), action.describe()
        assert not policy.may_approve("stranger", action, state), action.describe()
