"""The capacity keys of a policy: cooldowns by direction, a change budget in cards per hour,
SLO targets in TTFT/ITL (explained by `steward policy check`)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from agent.cli.policy import explained
from policies.history import History
from policies.model import SloTarget
from tests.policies.builders import NIGHT, default_policy, replace, run
from tools.actions import ScaleWorkload


def _policy(**change: object) -> object:
    base = default_policy()
    cooldowns = replace(
        base.cooldowns,
        by_action={},
        by_direction={"scale_up": timedelta(seconds=30), "scale_down": timedelta(minutes=5)},
    )
    budget = replace(base.change_budget, **change) if change else base.change_budget
    unbounded = replace(base.budget, total_cards=None)
    return replace(base, cooldowns=cooldowns, change_budget=budget, budget=unbounded)


def _after(ago: timedelta, replicas: int) -> History:
    return History().record(ScaleWorkload(workload="burst-llm", replicas=replicas), NIGHT - ago)


def test_growth_follows_quickly_and_a_scale_down_waits() -> None:
    policy = _policy()
    history = _after(timedelta(minutes=1), 1)  # burst-llm was scaled a minute ago
    up = run(ScaleWorkload(workload="burst-llm", replicas=1), policy=policy, history=history)
    assert up.verdicts[0].decision == "allow", up.verdicts[0].message
    down = run(ScaleWorkload(workload="worker", replicas=0), policy=policy, history=history)
    assert down.verdicts[0].decision == "allow"  # another workload: not cooling


def test_a_scale_down_soon_after_a_scale_is_denied_with_its_rule() -> None:
    policy = _policy()
    history = History().record(
        ScaleWorkload(workload="worker", replicas=1), NIGHT - timedelta(minutes=2)
    )
    verdict = run(
        ScaleWorkload(workload="worker", replicas=0), policy=policy, history=history
    ).verdicts[0]
    assert verdict.decision == "deny"
    assert "cooldown.scale_down" in verdict.rule_ids
    assert "allowed again from" in verdict.message


def test_cards_per_hour_counts_the_hour_and_the_plan() -> None:
    policy = _policy(cards_per_hour=1)
    history = History().record(
        ScaleWorkload(workload="worker", replicas=0), NIGHT - timedelta(minutes=30), cards_changed=1
    )
    verdict = run(
        ScaleWorkload(workload="burst-llm", replicas=1), policy=policy, history=history
    ).verdicts[0]
    assert verdict.decision == "deny"
    assert "budget.cards_per_hour" in verdict.rule_ids


def test_an_slo_needs_a_target_and_is_explained() -> None:
    with pytest.raises(ValidationError, match="ttft_s"):
        SloTarget()
    policy = _policy(cards_per_hour=40)
    policy = replace(policy, slo={"burst": SloTarget(ttft_s=3, itl_s=0.1)})
    lines = explained(policy)
    assert any("first token within 3 s, 100 ms between tokens" in line for line in lines)
    assert any(line.startswith("cooldowns.by_direction.scale_down") for line in lines)
    assert any("at most 40 card(s)" in line for line in lines)
