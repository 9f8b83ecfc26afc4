"""What the observed workloads add up to, per pool and per node.

Every judgement reads the same sums of an observation's workloads — cards and ready replicas
per pool, the worst queue wait per pool; a plan that cordons or drains also reads the nodes
each pool's replicas run on (`pools_placed`) and the replicas on the nodes it drains
(`on_nodes`). They hold names and positions, never the workload objects: a rule that needs a
workload reads it from the observation it judges.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tools.model import Workload


@dataclass(frozen=True, slots=True)
class WorkloadTotals:
    pool_cards: dict[str, int]
    pool_ready: dict[str, int]
    total_cards: int
    worst_queue_wait: dict[str, float]
    """pool -> the highest fresh queue wait among its workloads (pools with one only)."""


def totals_of(workloads: Sequence[Workload]) -> WorkloadTotals:
    """What `workloads` add up to, per pool."""
    pool_cards: dict[str, int] = {}
    pool_ready: dict[str, int] = {}
    total = 0
    for w in workloads:
        pool, cards = w.pool, w.cards
        pool_cards[pool] = pool_cards.get(pool, 0) + cards
        pool_ready[pool] = pool_ready.get(pool, 0) + w.ready_replicas
        total += cards
    return WorkloadTotals(
        pool_cards=pool_cards,
        pool_ready=pool_ready,
        total_cards=total,
        worst_queue_wait=_worst(workloads),
    )


Tally = tuple[int, int, int]
"""(the workload's position in the observation, its ready replicas on the node, its replicas on
the node). A position, not a name: an observation may list two workloads of one name."""


def on_nodes(workloads: Sequence[Workload], nodes: frozenset[str]) -> dict[str, list[Tally]]:
    """node of `nodes` -> the workloads with a replica on it, in workload order (the other
    nodes are not tallied: a plan reads the replicas of the nodes it drains only)."""
    on_node: dict[str, list[Tally]] = {}
    if not nodes:
        return on_node
    for i, w in enumerate(workloads):
        counts: dict[str, list[int]] = {}
        for replica in w.placement:
            if nodes.isdisjoint(replica.nodes):
                continue
            for node in nodes.intersection(replica.nodes):
                tally = counts.setdefault(node, [0, 0])
                tally[0] += 1 if replica.ready else 0
                tally[1] += 1
        for node, (ready, there) in counts.items():
            on_node.setdefault(node, []).append((i, ready, there))
    return on_node


def pools_placed(workloads: Sequence[Workload], pools: Collection[str]) -> dict[str, set[str]]:
    """pool of `pools` -> the nodes its workloads' replicas run on (pools with a replica)."""
    placed: dict[str, set[str]] = {}
    for w in workloads:
        if w.pool in pools:
            found = placed.setdefault(w.pool, set())
            for replica in w.placement:
                found.update(replica.nodes)
    return placed


def _worst(workloads: Sequence[Workload]) -> dict[str, float]:
    worst: dict[str, float] = {}
    for w in workloads:
        wait = w.queue_wait_s
        if wait.usable and wait.value is not None:
            pool = w.pool
            worst[pool] = max(wait.value, worst.get(pool, wait.value))
    return worst
