"""Preemption by pool priority: a higher-priority pool with queued demand takes cards back.

The render pool's cards are lent to inference (the burst pool) while nobody renders; when renders
queue, they go back even if the burst pool is busy. Busy is exactly what `pool.idle_before_zero`
and `slo.queue_wait` protect, so the preemption is a rule of its own, judged on the whole plan:

A scale-down of workload A (pool P) is a preemption *offer* when a later action of the same plan
(the beneficiary) scales up workload B of a pool Q with
- a strictly higher policy priority than P,
- fresh queued demand (B's queue depth reading is usable and above zero),
- room for the freed cards: the cards every offer to B frees are at most the cards B gains
  (nothing is taken beyond what the higher pool uses),
- the freed cards where B goes: A has a replica on the node a PlaceReplica names, or, for a
  ScaleWorkload, on a node matching Q's node selector.

The engine waives only `pool.idle_before_zero` and `slo.queue_wait` for an offer, and only when
the offer and its beneficiary are both allowed by every other rule (limits, minimum ready
replicas, protection, cooldowns, budgets, blast radius, windows, approvals). Otherwise the offer
is withdrawn, the scale-down is judged as if there were none, and a plan-level finding says why.

Rule id: pool.priority_preemption.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies.model import Policy
from policies.rules import pools, slo
from tools.actions import Action, PlaceReplica, Plan, ScaleWorkload
from tools.derived import placed_on
from tools.model import ClusterState, Workload

PRIORITY_PREEMPTION = "pool.priority_preemption"
WAIVABLE = frozenset({pools.IDLE_BEFORE_ZERO, slo.QUEUE_WAIT})
"""The rules an offer may override: those that keep a busy pool from shrinking."""


@dataclass(frozen=True, slots=True)
class Offer:
    """Action `index` (a scale-down) frees `cards` for the beneficiary at `beneficiary`."""

    index: int
    beneficiary: int
    cards: int
    message: str


@dataclass(frozen=True, slots=True)
class _Taker:
    """A scale-up that may take a lower pool's cards: what does not depend on the lender."""

    index: int
    workload: Workload
    priority: int
    gained: int
    depth: float
    node: str | None
    """The node a PlaceReplica names; None: any node of the taker pool's selector."""


def offers(plan: Plan, state: ClusterState, policy: Policy) -> dict[int, Offer]:
    """The plan's preemption offers, by the position of the scale-down (see the docstring)."""
    if len(plan.actions) < 2 or not policy.pools:
        return {}
    lenders = [found for i, a in enumerate(plan.actions) if (found := _lender(i, a, state, policy))]
    if not lenders:  # the common case: nothing in the plan frees cards; no pairing to do
        return {}
    first, lowest = lenders[0][0], min(lender[3] for lender in lenders)
    takers = [
        t
        for j, a in enumerate(plan.actions)
        if j > first and (t := _taker(j, a, state, policy)) and t.priority > lowest
    ]
    if not takers:
        return {}
    offered: dict[int, Offer] = {}
    given: dict[int, int] = {}
    for i, lender, freed, mine in lenders:
        lender_nodes = placed_on(lender)
        for t in takers:
            j = t.index
            if j <= i or t.workload.pool == lender.pool or t.priority <= mine:
                continue
            if given.get(j, 0) + freed > t.gained:
                continue
            if t.node is not None:
                if t.node not in lender_nodes:
                    continue
            elif state.pool_nodes(t.workload.pool).isdisjoint(lender_nodes):
                continue
            given[j] = given.get(j, 0) + freed
            offered[i] = Offer(
                index=i,
                beneficiary=j,
                cards=freed,
                message=(
                    f"pool {t.workload.pool} (priority {t.priority}) has "
                    f"{t.depth:g} queued on {t.workload.name} and takes these {freed} card(s) in "
                    f"action #{j + 1}; pool {lender.pool} has priority {mine}"
                ),
            )
            break
    return offered


def _lender(
    i: int, action: Action, state: ClusterState, policy: Policy
) -> tuple[int, Workload, int, int] | None:
    """The scale-down at position `i` as a possible lender: (i, its workload, the cards it
    frees, its pool's priority), or None if it frees nothing."""
    if type(action) is not ScaleWorkload or not _sane(action):
        return None  # an absurd action is denied by policy.targets, never an offer
    lender = state.workload(action.workload)
    if lender is None or lender.pool not in policy.pools:
        return None
    freed = (lender.desired_replicas - action.replicas) * lender.cards_per_replica
    if freed <= 0:
        return None
    return i, lender, freed, policy.pools[lender.pool].priority


def _taker(j: int, action: Action, state: ClusterState, policy: Policy) -> _Taker | None:
    """The scale-up at position `j` as a possible beneficiary, or None if it cannot be one."""
    if not _sane(action):
        return None
    if type(action) is not PlaceReplica and type(action) is not ScaleWorkload:
        return None
    taker = state.workload(action.workload)
    if taker is None or taker.pool not in policy.pools:
        return None
    depth = taker.queue_depth
    if not depth.usable or depth.value is None or depth.value <= 0:
        return None
    node: str | None
    if type(action) is PlaceReplica:
        gained = taker.cards_per_replica
        node = action.node
    else:
        assert type(action) is ScaleWorkload
        gained = (action.replicas - taker.desired_replicas) * taker.cards_per_replica
        node = None
    if gained <= 0:
        return None
    priority = policy.pools[taker.pool].priority
    return _Taker(j, taker, priority, gained, depth.value, node)


def _sane(action: Action) -> bool:
    """Whether an action's fields have the types they claim (a hostile planner can build one
    without validation); only such actions take part in an offer."""
    if type(action) is ScaleWorkload:
        count = action.replicas
        return isinstance(action.workload, str) and type(count) is int and count >= 0
    if type(action) is PlaceReplica:
        return isinstance(action.workload, str) and isinstance(action.node, str)
    return False
