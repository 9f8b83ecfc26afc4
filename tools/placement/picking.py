"""Picking nodes: the ranking for one replica, and where each of many replicas goes.

`pick_node` ranks every node (or linked pair) for one more replica; `explain_placement` adds the
rejected nodes and why; `pick_nodes` places many replicas one by one, each seeing the cards and
memory the earlier ones took, so nothing is over-committed.

Placing many replicas is a heap of fits, best first. A node is re-evaluated only when a replica
lands on it; on a fleet, untouched nodes of the same kind share one entry that yields its
members in name order (the ranking's last tie-break), so the cost follows the kinds of node,
not their number. The order is exactly the one a full re-ranking after each replica would give.
"""

from __future__ import annotations

import heapq

from tools.model import ClusterState, Workload
from tools.placement.catalog import Catalog, default_catalog
from tools.placement.demand import PlacementHints
from tools.placement.nodefit import NodeFit
from tools.placement.ranking import Candidate, Placement, Ranking, SortKey, Unit

_Entry = tuple[SortKey, int, Unit, int]
"""A heap entry: the key, the unit's version when pushed, the unit, its group (-1: none)."""


def explain_placement(
    workload: Workload,
    state: ClusterState,
    hints: PlacementHints | None = None,
    *,
    replicas: int | None = None,
    catalog: Catalog | None = None,
    explain: bool = True,
    limit: int | None = None,
) -> Placement:
    """Rank every node for one replica (`replicas=None`), or place `replicas` one by one.

    With `replicas`, candidate i is where replica i goes, each choice seeing the cards and
    memory the earlier ones took; fewer come back when capacity runs out. `explain=False`
    leaves the rejected nodes out (pick_node and pick_nodes do not return them) and, for a
    single-node replica, counts only the nodes the pool's selector matches, so the anomalies
    are those of the nodes it could use; `limit`
    keeps only the best candidates of the ranking (the others are not put into words).
    """
    ranking = Ranking(
        workload, state, hints or PlacementHints(), catalog or default_catalog(), explain=explain
    )
    if replicas is None:
        fitting = sorted(ranking.initial(), key=lambda item: item[0])[:limit]
        chosen = [ranking.candidate(i + 1, unit, fits) for i, (_, unit, fits) in enumerate(fitting)]
        return ranking.placement(chosen)
    return ranking.placement(_place(ranking, replicas))


def _place(ranking: Ranking, replicas: int) -> list[Candidate]:
    heap: list[_Entry] = []
    fits_of: dict[Unit, list[NodeFit]] = {}
    groups: list[list[Unit]] = []
    if ranking.memo is not None and ranking.demand.nodes_per_replica == 1:
        for prefix, members in ranking.grouped():
            heap.append(((*prefix, members[0]), 0, members[0], len(groups)))
            groups.append(members)
    else:
        for key, unit, fits in ranking.initial():
            heap.append((key, 0, unit, -1))
            fits_of[unit] = fits
    heapq.heapify(heap)
    next_member = [1] * len(groups)
    version: dict[Unit, int] = {}
    by_node: dict[str, list[Unit]] = {}
    for unit in ranking.units:
        for name in unit:
            by_node.setdefault(name, []).append(unit)
    placed: list[Candidate] = []
    while heap and len(placed) < replicas:
        key, seen, unit, group = heapq.heappop(heap)
        if group >= 0 and next_member[group] < len(groups[group]):
            member = groups[group][next_member[group]]
            next_member[group] += 1
            heapq.heappush(heap, ((*key[:-1], member), 0, member, group))
        if seen != version.get(unit, 0):
            continue
        fits = fits_of.get(unit, []) if group < 0 else _fits(ranking, unit)
        if not fits:
            continue
        placed.append(ranking.candidate(len(placed) + 1, unit, fits))
        ranking.took(unit)
        for f in fits:
            ranking.overlay.take(f, ranking.demand)
        for touched in {u for name in unit for u in by_node[name]}:
            version[touched] = version.get(touched, 0) + 1
            again = _fits(ranking, touched)
            if again:
                fits_of[touched] = again
                heapq.heappush(heap, (ranking.key(touched, again), version[touched], touched, -1))
    return placed


def _fits(ranking: Ranking, unit: Unit) -> list[NodeFit]:
    return [r for r in ranking.fit(unit) if isinstance(r, NodeFit)]


def pick_node(
    workload: Workload,
    state: ClusterState,
    hints: PlacementHints | None = None,
    *,
    catalog: Catalog | None = None,
    limit: int | None = None,
) -> list[Candidate]:
    """Every node (or linked pair) that fits one more replica, best first, with reasons.

    Empty when nothing fits; `explain_placement` says why each node was rejected. `limit`
    returns only the best few (cheaper on a large fleet when only the first is wanted).
    """
    placement = explain_placement(
        workload, state, hints, catalog=catalog, explain=False, limit=limit
    )
    return list(placement.candidates)


def pick_nodes(
    workload: Workload,
    state: ClusterState,
    replicas: int,
    hints: PlacementHints | None = None,
    *,
    catalog: Catalog | None = None,
) -> list[Candidate]:
    """Where each of `replicas` new replicas goes, in order, never over-committing a node."""
    placement = explain_placement(
        workload, state, hints, replicas=replicas, catalog=catalog, explain=False
    )
    return list(placement.candidates)
