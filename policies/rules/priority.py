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
from typing import NamedTuple, assert_never

from policies.model import Policy
from policies.rules import pools, slo
from tools.actions import (
    CordonNode,
    DrainNode,
    NoOp,
    PlaceReplica,
    Plan,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)
from tools.labels import matches
from tools.model import ClusterState, Workload, placed_on

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


class _Taker(NamedTuple):
    """A scale-up that may take a lower pool's cards: what does not depend on the lender."""

    position: int
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
    lenders, scale_ups = _sides(plan, state, policy)
    if not lenders:  # the common case: nothing in the plan frees cards; no pairing to do
        return {}
    first, lowest = lenders[0][0], min(lender[3] for lender in lenders)
    takers = [t for t in scale_ups if t.position > first and t.priority > lowest]
    if not takers:
        return {}
    # Where each taker's cards go: a node it names, or any node of its pool's selector. A lender
    # is paired only with the takers its replicas' nodes reach, earliest first.
    on_node: dict[str, list[_Taker]] = {}
    in_pool: dict[str, list[_Taker]] = {}
    for t in takers:
        if t.node is not None:
            on_node.setdefault(t.node, []).append(t)
        else:
            in_pool.setdefault(t.workload.pool, []).append(t)
    # Whether a taker pool's selector reaches a lender is asked of the lender's own nodes (a
    # few), never of the whole fleet (`steward bench policy`: 3 pools x 1,000 nodes matched).
    selectors = {pool: _selector(state, pool) for pool in in_pool}
    offered: dict[int, Offer] = {}
    given: dict[int, int] = {}
    for i, lender, freed, mine in lenders:
        lender_nodes = placed_on(lender)
        reached = [t for node in lender_nodes for t in on_node.get(node, ())]
        for pool, pool_takers in in_pool.items():
            if pool_takers[0].priority > mine and any(
                _matched(state, node, selectors[pool]) for node in lender_nodes
            ):
                reached += pool_takers
        reached.sort(key=_position)
        for t in reached:
            j = t.position
            if j <= i or t.workload.pool == lender.pool or t.priority <= mine:
                continue
            if given.get(j, 0) + freed > t.gained:
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


def _selector(state: ClusterState, pool: str) -> dict[str, str]:
    """The pool's node selector (none: every node)."""
    spec = state.pool(pool)
    return spec.node_selector if spec is not None else {}


def _matched(state: ClusterState, name: str, selector: dict[str, str]) -> bool:
    """Whether `name` is an observed node that `selector` matches (as pool_nodes would say)."""
    node = state.node(name)
    return node is not None and matches(node.labels, selector)


def _position(taker: _Taker) -> int:
    return taker.position


_Lender = tuple[int, Workload, int, int]
"""A scale-down as a possible lender: (its position, its workload, the cards it frees, its
pool's priority)."""


def _sides(plan: Plan, state: ClusterState, policy: Policy) -> tuple[list[_Lender], list[_Taker]]:
    """The plan's scale-downs that free cards (possible lenders) and its scale-ups of a pool
    with fresh queued demand (possible beneficiaries), in plan order: one pass, each action's
    workload read once (a pydantic field costs ~150 ns a read: each is read once here)."""
    priorities = {name: limits.priority for name, limits in policy.pools.items()}
    lenders: list[_Lender] = []
    takers: list[_Taker] = []
    for i, action in enumerate(plan.actions):
        node: str | None = None
        count: int | None = None  # None: a placement (one replica more)
        match action:
            case ScaleWorkload():
                name, count = action.workload, action.replicas
                if not (isinstance(name, str) and type(count) is int and count >= 0):
                    continue  # an absurd action is denied by policy.targets, never an offer
            case PlaceReplica():
                name, node = action.workload, action.node
                if not (isinstance(name, str) and isinstance(node, str)):
                    continue
            case CordonNode() | UncordonNode() | DrainNode() | RotateMode() | NoOp():
                continue
            case _:
                assert_never(action)
        workload = state.workload(name)
        if workload is None:
            continue
        pool = workload.pool
        priority = priorities.get(pool)
        if priority is None:
            continue
        unit = workload.cards_per_replica
        if count is not None:
            gained = (count - workload.desired_replicas) * unit
            if gained < 0:
                lenders.append((i, workload, -gained, priority))
                continue
        else:
            gained = unit
        if gained <= 0:
            continue
        depth = workload.queue_depth
        value = depth.value
        if depth.status != "fresh" or value is None or value <= 0:
            continue  # not usable (Metric.usable), or nothing queued
        takers.append(_Taker(i, workload, priority, gained, value, node))
    return lenders, takers
