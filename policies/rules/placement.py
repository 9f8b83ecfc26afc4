"""Where a new replica may go: a schedulable node, matching the pool's node selector, on card
models the pool allows. Node cordons and drains earlier in the plan count.

Rule ids: place.node_unschedulable, place.node_selector, pool.gpu_model.
"""

from __future__ import annotations

from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger
from tools.actions import Action, PlaceReplica
from tools.effects import Effect
from tools.labels import unmatched

UNSCHEDULABLE = "place.node_unschedulable"
SELECTOR = "place.node_selector"
GPU_MODEL = "pool.gpu_model"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    if type(action) is not PlaceReplica:
        return []
    node = ctx.state.node(action.node)
    workload = ctx.state.workload(action.workload)
    assert node is not None and workload is not None
    denials = []
    if not ledger.schedulable(node.name):
        denials.append(
            Denial(
                UNSCHEDULABLE,
                f"{node.name} is not schedulable (cordoned, not ready, or tainted NoSchedule)",
            )
        )
    pool = ctx.state.pool(workload.pool)
    if pool is not None:
        wrong = unmatched(node.labels, pool.node_selector)
        if wrong:
            key, value = next(iter(wrong.items()))
            denials.append(
                Denial(
                    SELECTOR, f"{node.name} lacks label {key}={value} that pool {pool.name} selects"
                )
            )
    allowed = ctx.policy.pools[workload.pool].gpu_models
    facts = ctx.state.node_facts(node.name)
    if allowed and not action.gpus and facts is not None and not facts.models.isdisjoint(allowed):
        return denials  # any card will do and one is of an allowed model: no card to read
    if allowed:
        cards = [g for g in node.gpus if not action.gpus or g.uuid in action.gpus]
        if not any(g.model in allowed for g in cards) or (
            action.gpus and any(g.model not in allowed for g in cards)
        ):
            models = sorted({g.model for g in cards}) or ["no cards"]
            denials.append(
                Denial(
                    GPU_MODEL,
                    f"pool {workload.pool} may use {', '.join(allowed)}; {node.name} offers "
                    f"{', '.join(models)}",
                )
            )
    return denials
