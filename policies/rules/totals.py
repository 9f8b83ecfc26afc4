"""What the observed workloads add up to, per pool and per node.

Every judgement reads the same sums of an observation's workloads — cards and ready replicas
per pool, the worst queue wait per pool, the nodes each pool's replicas run on, the replicas
on each node. It holds names and positions, never the workload objects: a rule that needs a
workload reads it from the observation it judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tools.model import Workload, placed_on

Tally = tuple[int, int, int]
"""(the workload's position in the observation, its ready replicas on the node, its replicas on
the node). A position, not a name: an observation may list two workloads of one name."""


@dataclass(frozen=True, slots=True)
class WorkloadTotals:
    pool_cards: dict[str, int]
    pool_ready: dict[str, int]
    total_cards: int
    worst_queue_wait: dict[str, float]
    """pool -> the highest fresh queue wait among its workloads (pools with one only)."""
    pool_placed: dict[str, frozenset[str]]
    """pool -> the nodes its workloads' replicas run on."""
    on_node: dict[str, list[Tally]]
    """node -> the workloads with a replica on it, in workload order."""


def totals_of(workloads: Sequence[Workload]) -> WorkloadTotals:
    """What `workloads` add up to, per pool and per node."""
    pool_cards: dict[str, int] = {}
    pool_ready: dict[str, int] = {}
    total = 0
    placed: dict[str, list[frozenset[str]]] = {}
    on_node: dict[str, list[Tally]] = {}
    for i, w in enumerate(workloads):
        pool = w.pool
        pool_cards[pool] = pool_cards.get(pool, 0) + w.cards
        pool_ready[pool] = pool_ready.get(pool, 0) + w.ready_replicas
        total += w.cards
        placed.setdefault(pool, []).append(placed_on(w))
        counts: dict[str, list[int]] = {}
        for replica in w.placement:
            for node in set(replica.nodes):
                tally = counts.setdefault(node, [0, 0])
                tally[0] += 1 if replica.ready else 0
                tally[1] += 1
        for node, (ready, there) in counts.items():
            on_node.setdefault(node, []).append((i, ready, there))
    return WorkloadTotals(
        pool_cards=pool_cards,
        pool_ready=pool_ready,
        total_cards=total,
        worst_queue_wait=_worst(workloads),
        pool_placed={pool: frozenset().union(*sets) for pool, sets in placed.items()},
        on_node=on_node,
    )


def _worst(workloads: Sequence[Workload]) -> dict[str, float]:
    worst: dict[str, float] = {}
    for w in workloads:
        wait = w.queue_wait_s
        if wait.usable and wait.value is not None:
            pool = w.pool
            worst[pool] = max(wait.value, worst.get(pool, wait.value))
    return worst
