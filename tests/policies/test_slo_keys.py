"""The capacity keys of a policy: cooldowns by direction, a change budget in cards per hour,
SLO targets in TTFT/ITL and the reactive thresholds (explained by `steward policy check`)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agent.cli.policy import explained
from agent.planners.rule_settings import RulesSettings
from policies.errors import PolicyError
from policies.history import History
from policies.loader import parse_policy
from policies.model import Reactive, SloTarget
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


def test_the_reactive_thresholds_are_policy_keys_and_explained() -> None:
    policy = default_policy()
    assert policy.reactive == Reactive()  # the shipped policy states the defaults
    policy = replace(policy, slo={**policy.slo, "burst": SloTarget(ttft_s=3, itl_s=0.1)})
    lines = explained(policy)
    reactive = next(line for line in lines if line.startswith("reactive (pools burst)"))
    for key in ("kv_usage", "ttft_share", "itl_share", "waiting_readings"):
        assert f"reactive.{key}" in reactive
    assert any("usual dip below its replicas" in line for line in lines)  # the dip wait
    settings = RulesSettings.from_policy(
        replace(policy, reactive=Reactive(kv_usage=0.9, ttft_share=0.8, waiting_readings=3))
    ).assess
    assert (settings.reactive_kv, settings.reactive_ttft_share) == (0.9, 0.8)
    assert settings.reactive_waiting_readings == 3


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    kv=st.floats(min_value=-1, max_value=2, allow_nan=False),
    ttft=st.floats(min_value=-1, max_value=3, allow_nan=False),
    readings=st.integers(min_value=-2, max_value=10),
)
def test_any_reactive_block_loads_or_is_refused_naming_the_key(
    kv: float, ttft: float, readings: int
) -> None:
    text = (
        "pools: {burst: {max_cards: 2}}\n"
        "slo: {burst: {ttft_s: 3}}\n"
        f"reactive: {{kv_usage: {kv!r}, ttft_share: {ttft!r}, waiting_readings: {readings}}}\n"
    )
    valid = 0 < kv <= 1 and ttft > 0 and readings >= 1
    if valid:
        loaded = parse_policy(text).reactive
        assert (loaded.kv_usage, loaded.ttft_share, loaded.waiting_readings) == (
            kv,
            ttft,
            readings,
        )
        return
    with pytest.raises(PolicyError) as caught:
        parse_policy(text)
    named = " ".join(p.message for p in caught.value.problems) + str(caught.value)
    assert "reactive" in named
