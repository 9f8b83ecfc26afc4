"""What the rules planner is told: pool limits and priorities, idle times and SLOs, the
blast radius and which placements need a human, all taken from the policy."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agent.signals.settings import AssessSettings
from policies.model import Policy
from tools.modes import AdviceSettings


class PoolRules(BaseModel):
    """What the planner needs to know of one pool (filled from the policy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_cards: int = 0
    max_cards: int | None = None
    priority: int = 0


class RulesSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    assess: AssessSettings = AssessSettings()
    pools: dict[str, PoolRules] = {}
    advice: AdviceSettings = AdviceSettings()
    """When a rotation pays (tools.modes.rotation_gain); the dwell is the policy's."""
    drain_deadline_s: float = 120.0
    """How long a replica being scaled down may finish its in-flight requests (the backend's
    grace period: the simulator's SCALE_DOWN_GRACE_S, a pod's terminationGracePeriodSeconds);
    told in the ETA of a workload waiting on lent cards."""
    cards_per_tick: int | None = None
    """The policy's blast radius: cards one plan may change."""
    placements_gated: tuple[str, ...] = ()
    """Pools whose placements need a human by the policy ("*": every pool): their growth is
    proposed one placement at a time, never as a scale that the gate would not see."""

    def pool(self, name: str) -> PoolRules:
        return self.pools.get(name, PoolRules())

    @classmethod
    def from_policy(cls, policy: Policy, base: AssessSettings | None = None) -> RulesSettings:
        """Pool limits, priorities, idle times and SLOs taken from the policy.

        A pool without `idle_before_zero` is never proposed for scale-to-zero by this planner:
        going to zero is a choice the policy has to make explicitly.
        """
        base = base or AssessSettings()
        assess = base.model_copy(
            update={
                "slo_wait_s": {
                    k: v.queue_wait_s for k, v in policy.slo.items() if v.queue_wait_s is not None
                },
                "slo_ttft_s": {k: v.ttft_s for k, v in policy.slo.items() if v.ttft_s is not None},
                "slo_itl_s": {k: v.itl_s for k, v in policy.slo.items() if v.itl_s is not None},
                "keep_loads": {k: p.keep_loads for k, p in policy.pools.items()},
                "reactive_kv": policy.reactive.kv_usage,
                "reactive_ttft_share": policy.reactive.ttft_share,
                "reactive_itl_share": policy.reactive.itl_share,
                "reactive_waiting_readings": policy.reactive.waiting_readings,
                "min_cards": {k: p.min_cards for k, p in policy.pools.items()},
                "link_min_fraction": policy.rotation.min_link_fraction or base.link_min_fraction,
                "idle_to_zero_s": {
                    k: p.idle_before_zero.total_seconds()
                    for k, p in policy.pools.items()
                    if p.idle_before_zero is not None and p.min_cards == 0
                },
            }
        )
        pools = {
            k: PoolRules(min_cards=p.min_cards, max_cards=p.max_cards, priority=p.priority)
            for k, p in policy.pools.items()
        }
        advice = AdviceSettings(min_dwell_s=policy.rotation.min_dwell.total_seconds())
        radius = policy.change_budget.cards_per_tick
        gated = tuple(
            pool
            for rule in policy.approvals
            if "place_replica" in rule.actions and "scale_workload" not in rule.actions
            for pool in (rule.pools or ("*",))
        )
        return cls(
            assess=assess,
            pools=pools,
            advice=advice,
            cards_per_tick=radius,
            placements_gated=gated,
        )
