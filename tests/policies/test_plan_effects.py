"""Plan-level judgement: the combined effect of several actions, judged in order."""

from __future__ import annotations

from tests.policies.builders import default_policy, homelab, replace, run, with_workload
from tools.actions import DrainNode, NoOp, RotateMode, ScaleWorkload
from tools.model import ActiveMode, ReplicaPlacement


def split_state() -> object:
    """The GX10 pair in split mode: resident-a on gx10-a, resident-b on gx10-b, both ready."""
    state = with_workload(homelab(), "beast", desired_replicas=0, ready_replicas=0, placement=())
    for name, node in (("resident-a", "gx10-a"), ("resident-b", "gx10-b")):
        placed = ReplicaPlacement(index=0, nodes=(node,), gpus=(f"GPU-{node}",), ready=True)
        state = with_workload(
            state, name, desired_replicas=1, ready_replicas=1, placement=(placed,)
        )
    return replace(state, active_mode=ActiveMode(name="split", since=state.observed_at))


def loose_policy() -> object:
    """The default policy with gx10 allowed down to zero cards and tts unprotected."""
    base = default_policy()
    pools = dict(base.pools)
    pools["gx10"] = replace(pools["gx10"], min_cards=0)
    return replace(base, pools=pools, protected=())


def test_two_scale_downs_that_cross_a_minimum_together() -> None:
    judgement = run(
        ScaleWorkload(workload="worker", replicas=0),
        ScaleWorkload(workload="tts", replicas=0),
        policy=loose_policy(),
    )
    first, second = judgement.verdicts
    assert first.decision == "allow"
    assert second.decision == "deny"
    assert "pool.min_cards" in second.rule_ids and "plan.combined_effect" in second.rule_ids
    assert "only together with action(s) #1" in second.message
    assert any(f.rule_id == "plan.combined_effect" and f.actions == (0, 1)
               for f in judgement.findings)  # fmt: skip


def test_each_of_those_alone_is_allowed() -> None:
    for name in ("worker", "tts"):
        assert run(ScaleWorkload(workload=name, replicas=0), policy=loose_policy()).all_allowed


def test_a_drain_and_a_scale_that_leave_a_serving_pool_without_a_ready_replica() -> None:
    judgement = run(
        DrainNode(node="gx10-a"),  # resident-a loses its ready replica (waits for approval)
        ScaleWorkload(workload="resident-b", replicas=0),  # and resident-b would go too
        state=split_state(),
        policy=loose_policy(),
    )
    drain, scale = judgement.verdicts
    assert drain.decision == "needs_approval"
    assert scale.decision == "deny"
    assert "serving.min_ready_replicas" in scale.rule_ids
    assert "plan.combined_effect" in scale.rule_ids


def test_the_scale_alone_is_allowed_then() -> None:
    judgement = run(ScaleWorkload(workload="resident-b", replicas=0), state=split_state(),
                    policy=loose_policy())  # fmt: skip
    assert judgement.all_allowed


def test_a_scale_then_a_drain_is_refused_at_the_drain() -> None:
    judgement = run(
        ScaleWorkload(workload="resident-b", replicas=0),
        DrainNode(node="gx10-a"),
        state=split_state(),
        policy=loose_policy(),
    )
    assert [v.decision for v in judgement.verdicts] == ["allow", "deny"]
    assert "serving.min_ready_replicas" in judgement.verdicts[1].rule_ids


def test_the_allowed_actions_hold_without_the_ones_awaiting_approval() -> None:
    # worker up needs nothing, tts down is fine only if worker goes up first — but worker up
    # is made to wait for approval here, so tts down must not count on it.
    from policies.model import ApprovalRule, Approvers, Group

    policy = replace(
        loose_policy(),
        approvals=(ApprovalRule(name="worker_up", actions=("scale_workload",), direction="up",
                                pools=("workstation",), approvers=("owners",)),),
        approvers=Approvers(groups={"owners": Group(members=("ana",))}),
    )  # fmt: skip
    state = with_workload(homelab(), "worker", desired_replicas=0, ready_replicas=0, placement=())
    judgement = run(
        ScaleWorkload(workload="worker", replicas=1),
        ScaleWorkload(workload="tts", replicas=0),
        state=state,
        policy=policy,
    )
    assert [v.decision for v in judgement.verdicts] == ["needs_approval", "deny"]
    assert "pool.min_cards" in judgement.verdicts[1].rule_ids


def test_noops_do_not_count_or_conflict() -> None:
    judgement = run(NoOp(reason="a"), NoOp(reason="b"), RotateMode(target_mode="split"))
    assert judgement.all_allowed
    assert judgement.findings == ()


def test_a_judgement_lists_allowed_waiting_and_denied_actions() -> None:
    from tests.policies.builders import DAY

    judgement = run(
        RotateMode(target_mode="split"),
        ScaleWorkload(workload="ghost", replicas=1),
        ScaleWorkload(workload="worker", replicas=0),
        state=homelab(at=DAY),
    )
    assert judgement.needs_approval == (RotateMode(target_mode="split"),)
    assert judgement.denied == (ScaleWorkload(workload="ghost", replicas=1),)
    assert judgement.allowed == (ScaleWorkload(workload="worker", replicas=0),)
    assert judgement.now == DAY
    assert not judgement.all_allowed
