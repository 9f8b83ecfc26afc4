"""Pool limits, the total budget, serving pools and scale-to-zero, one table per rule."""

from __future__ import annotations

from datetime import timedelta

import pytest

from policies.history import History
from tests.policies.builders import (
    default_policy,
    homelab,
    replace,
    run,
    watched,
    with_node,
    with_workload,
)
from tools.actions import PlaceReplica, ScaleWorkload
from tools.model import Metric

IDLE_RENDER = homelab(render_util=0.0)
NO_RENDER = with_workload(homelab(), "render", desired_replicas=0, ready_replicas=0, placement=())


@pytest.mark.parametrize(
    ("state", "action", "decision", "rule", "instead"),
    [
        # render asks 2 cards a replica; max_cards 2 -> one replica at most
        (homelab(), ScaleWorkload(workload="render", replicas=2), "deny", "pool.max_cards", None),
        # burst-llm: max 2 cards, the render cards are free -> at most 2
        (NO_RENDER, ScaleWorkload(workload="burst-llm", replicas=5), "deny", "pool.max_cards", 2),
        (NO_RENDER, ScaleWorkload(workload="burst-llm", replicas=2), "allow", None, None),
        # gx10 min_cards 2: beast down to zero is refused (and its ready replica too)
        (homelab(), ScaleWorkload(workload="beast", replicas=0), "deny", "pool.min_cards", None),
        (homelab(), ScaleWorkload(workload="beast", replicas=0), "deny",
         "serving.min_ready_replicas", None),
        # the total budget of 6 is full (gx10 2 + workstation 2 + render 2)
        (homelab(), ScaleWorkload(workload="burst-llm", replicas=1), "deny",
         "budget.total_cards", None),
        # workstation: min 1 card, worker may go
        (homelab(), ScaleWorkload(workload="worker", replicas=0), "allow", None, None),
    ],
)  # fmt: skip
def test_pool_limits(state, action, decision, rule, instead) -> None:
    verdict = run(action, state=state).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if rule:
        assert rule in verdict.rule_ids
    if instead is None:
        assert verdict.allowed_instead is None
    else:
        assert verdict.allowed_instead == ScaleWorkload(workload=action.workload, replicas=instead)
        assert f"at most {instead}" in verdict.message


def test_a_denial_at_the_current_count_says_no_change_would_pass() -> None:
    verdict = run(ScaleWorkload(workload="render", replicas=2)).verdicts[0]
    assert "Would allow: no change from the current 1 replica(s)" in verdict.message


def test_a_pool_already_above_its_max_may_still_shrink() -> None:
    policy = default_policy(budget=replace(default_policy().budget, total_cards=None))
    state = with_workload(NO_RENDER, "burst-llm", desired_replicas=4, ready_replicas=4)
    assert run(ScaleWorkload(workload="burst-llm", replicas=3), state=state, policy=policy,
               history=watched(state, policy, timedelta(hours=1))).all_allowed  # fmt: skip
    verdict = run(ScaleWorkload(workload="burst-llm", replicas=5), state=state,
                  policy=policy).verdicts[0]  # fmt: skip
    assert verdict.decision == "deny" and "pool.max_cards" in verdict.rule_ids


@pytest.mark.parametrize(
    ("watched_for", "render_util", "decision"),
    [
        (timedelta(minutes=15), 0.0, "allow"),
        (timedelta(minutes=10), 0.0, "allow"),
        (timedelta(minutes=9), 0.0, "deny"),
        (timedelta(minutes=15), 85.0, "deny"),
    ],
)
def test_render_goes_to_zero_only_after_ten_idle_minutes(watched_for, render_util, decision):
    state = homelab(render_util=render_util)
    policy = default_policy()
    history = watched(state, policy, watched_for)
    verdict = run(ScaleWorkload(workload="render", replicas=0), state=state,
                  history=history).verdicts[0]  # fmt: skip
    assert verdict.decision == decision, verdict.message
    if decision == "deny":
        assert verdict.rule_ids == ("pool.idle_before_zero",)


def test_idle_time_counts_from_the_last_busy_observation() -> None:
    policy = default_policy()
    busy = homelab(render_util=90.0)
    start = replace(busy, observed_at=busy.observed_at - timedelta(minutes=30))
    history = History().observed(start, policy)
    was_busy = replace(busy, observed_at=busy.observed_at - timedelta(minutes=4))
    history = history.observed(was_busy, policy).observed(IDLE_RENDER, policy)
    verdict = run(ScaleWorkload(workload="render", replicas=0), history=history).verdicts[0]
    assert verdict.decision == "deny"
    assert "idle for 4m of the 10m required" in verdict.message


def test_unmeasured_idleness_never_counts_as_idle() -> None:
    state = with_node(
        homelab(),
        "render-1",
        gpus=tuple(
            replace(g, utilization=Metric.missing()) for g in homelab().node("render-1").gpus
        ),
    )
    history = watched(state, default_policy(), timedelta(hours=1))
    verdict = run(ScaleWorkload(workload="render", replicas=0), state=state,
                  history=history).verdicts[0]  # fmt: skip
    assert verdict.decision == "deny"
    assert "cannot tell whether pool render is idle" in verdict.message


@pytest.mark.parametrize(
    ("node", "decision", "rule"),
    [
        ("render-1", "allow", None),
        ("gx10-a", "deny", "pool.gpu_model"),
    ],
)
def test_replicas_go_only_on_card_models_the_pool_allows(node, decision, rule) -> None:
    verdict = run(PlaceReplica(workload="burst-llm", node=node), state=NO_RENDER).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if rule:
        assert rule in verdict.rule_ids


def test_a_replica_is_not_placed_on_a_cordoned_node() -> None:
    state = with_node(NO_RENDER, "render-1", cordoned=True)
    verdict = run(PlaceReplica(workload="burst-llm", node="render-1"), state=state).verdicts[0]
    assert verdict.rule_ids == ("place.node_unschedulable",)


def test_a_replica_is_placed_only_where_the_pool_selects() -> None:
    state = with_workload(homelab(), "beast", desired_replicas=0, ready_replicas=0, placement=())
    verdict = run(PlaceReplica(workload="beast", node="ws-1"), state=state).verdicts[0]
    assert "place.node_selector" in verdict.rule_ids
