"""pool.priority_preemption: a higher-priority pool with queued demand takes a busy lower pool's
cards in the same plan — and only then, and only past the rules that keep a busy pool whole."""

from __future__ import annotations

from datetime import timedelta

import pytest

from policies.engine import RULE_IDS
from policies.history import History
from policies.judgement import Judgement
from tests.policies.builders import (
    NIGHT,
    default_policy,
    fresh,
    homelab,
    replace,
    run,
    with_workload,
)
from tools.actions import Action, NoOp, PlaceReplica, ScaleWorkload
from tools.model import ClusterState, ReplicaPlacement

PREEMPTION = "pool.priority_preemption"


def borrowed(render_queue: float = 3, burst_wait: float = 90.0) -> ClusterState:
    """render at zero with `render_queue` jobs waiting; burst-llm on both render cards, busy
    (queue 8, wait `burst_wait` s against its 60 s SLO, cards at 95 %)."""
    state = homelab(render_util=95.0)
    state = with_workload(state, "render", desired_replicas=0, ready_replicas=0, placement=(),
                          queue_depth=fresh(render_queue), queue_wait_s=fresh(40))  # fmt: skip
    placed = tuple(
        ReplicaPlacement(index=i, nodes=("render-1",), gpus=(f"GPU-r{i}",), ready=True)
        for i in (0, 1)
    )
    return with_workload(state, "burst-llm", desired_replicas=2, ready_replicas=2,
                         placement=placed, queue_depth=fresh(8),
                         queue_wait_s=fresh(burst_wait))  # fmt: skip


DOWN = ScaleWorkload(workload="burst-llm", replicas=0, reason="render needs its cards")
UP = ScaleWorkload(workload="render", replicas=1, reason="renders queue")
PLACE = PlaceReplica(workload="render", node="render-1", reason="renders queue")


def decisions(judgement: Judgement) -> list[tuple[str, tuple[str, ...]]]:
    return [(v.decision, v.rule_ids) for v in judgement.verdicts]


def test_the_rule_is_listed() -> None:
    assert PREEMPTION in RULE_IDS


@pytest.mark.parametrize("up", [UP, PLACE], ids=["scale", "place"])
def test_renders_queue_and_a_busy_burst_pool_gives_its_cards_back(up: Action) -> None:
    judgement = run(DOWN, up, state=borrowed())
    assert decisions(judgement) == [("allow", (PREEMPTION,)), ("allow", ("policy.within_limits",))]
    message = judgement.verdicts[0].message
    assert "pool render (priority 60) has 3 queued on render" in message
    assert "pool.idle_before_zero" in message and "slo.queue_wait" in message
    assert not judgement.findings


@pytest.mark.parametrize(
    ("state", "actions"),
    [
        # no render demand: nothing to preempt for; the busy pool keeps its cards
        (borrowed(render_queue=0), (DOWN, UP)),
        # the beneficiary must come after the scale-down (it is judged on the freed cards)
        (borrowed(), (UP, DOWN)),
        # alone, the scale-down of a busy pool is what it always was
        (borrowed(), (DOWN,)),
        # the taker must be of a higher-priority pool: burst (20) takes nothing from render (60)
        (borrowed(), (DOWN, ScaleWorkload(workload="burst-llm", replicas=3))),
    ],
    ids=["no queue", "taker first", "alone", "same pool"],
)
def test_no_preemption_without_a_higher_pool_with_queued_demand_after_it(
    state: ClusterState, actions: tuple[Action, ...]
) -> None:
    judgement = run(*actions, state=state)
    down = next(v for v in judgement.verdicts if v.action == DOWN)
    assert down.decision == "deny"
    assert PREEMPTION not in down.rule_ids
    assert {"pool.idle_before_zero", "slo.queue_wait"} <= set(down.rule_ids)


def test_freeing_more_cards_than_the_higher_pool_takes_is_no_preemption() -> None:
    # burst-llm on 2 cards plus a third elsewhere would free 3; render takes 2.
    state = with_workload(borrowed(), "burst-llm", desired_replicas=3)
    judgement = run(DOWN, UP, state=state)
    assert judgement.verdicts[0].decision == "deny"
    assert "pool.idle_before_zero" in judgement.verdicts[0].rule_ids


def test_a_beneficiary_that_fails_its_own_rules_withdraws_the_offer() -> None:
    # render's max_cards is 2: two replicas (4 cards) are denied, so burst-llm keeps its cards.
    judgement = run(DOWN, ScaleWorkload(workload="render", replicas=2), state=borrowed())
    assert [v.decision for v in judgement.verdicts] == ["deny", "deny"]
    assert "slo.queue_wait" in judgement.verdicts[0].rule_ids
    found = [f for f in judgement.findings if f.rule_id == PREEMPTION]
    assert len(found) == 1 and found[0].actions == (0, 1)
    assert "action #2 is deny" in found[0].message


def test_cooldowns_are_not_waived() -> None:
    history = History().record(
        ScaleWorkload(workload="burst-llm", replicas=2), NIGHT - timedelta(seconds=30)
    )
    judgement = run(DOWN, UP, state=borrowed(), history=history)
    assert judgement.verdicts[0].decision == "deny"
    assert "cooldown.scale_workload" in judgement.verdicts[0].rule_ids
    assert judgement.verdicts[1].decision == "deny"  # the cards were never freed


def test_protection_is_not_waived() -> None:
    policy = default_policy(protected=("tts", "burst-llm"))
    judgement = run(DOWN, UP, state=borrowed(), policy=policy)
    assert judgement.verdicts[0].decision == "deny"
    assert "protected.never_below_current" in judgement.verdicts[0].rule_ids


def test_the_blast_radius_is_not_waived() -> None:
    policy = default_policy()
    policy = replace(policy, change_budget=replace(policy.change_budget, cards_per_tick=3))
    judgement = run(DOWN, UP, state=borrowed(), policy=policy)
    assert judgement.verdicts[1].decision == "deny"
    assert judgement.verdicts[0].decision == "deny"  # withdrawn: render could not take them
    assert any(f.rule_id == PREEMPTION for f in judgement.findings)


def test_a_stale_render_queue_is_no_demand() -> None:
    state = borrowed()
    render = state.workload("render")
    assert render is not None
    stale = render.queue_depth.aged(NIGHT + timedelta(hours=1), 60.0)
    state = with_workload(state, "render", queue_depth=stale)
    judgement = run(DOWN, UP, state=state)
    assert judgement.verdicts[0].decision == "deny"


def test_noops_between_the_pair_change_nothing() -> None:
    judgement = run(DOWN, NoOp(reason="thinking"), UP, state=borrowed())
    assert judgement.verdicts[0].rule_ids == (PREEMPTION,)
    assert judgement.verdicts[2].decision == "allow"
