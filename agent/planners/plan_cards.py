"""The cards of one plan in the making: what the rules planner has taken and given back so far.

Per pool, the cards the plan so far leaves it (so that one plan never over-commits a pool), the
cards the plan changes (against the policy's blast radius), the workloads still waiting for
cards, and the cluster as the plan's placements leave it (so that a later placement sees the
cards an earlier one took).
"""

from __future__ import annotations

from tools.model import ClusterState, ReplicaPlacement, Workload
from tools.placement.ranking import Candidate


class PlanCards:
    """Cards per pool as the plan so far leaves them (so one plan never over-commits a pool),
    the cards the plan changes, and the cluster as the plan's placements leave it."""

    def __init__(self, state: ClusterState) -> None:
        self.view = state
        self.changed = 0
        self._pools: dict[str, int] = {}
        self.waiting: list[Workload] = []
        """Workloads with wanted replicas not placed yet (waiting for cards being freed)."""
        for w in state.workloads:
            self._pools[w.pool] = self._pools.get(w.pool, 0) + w.cards
            if sum(1 for r in w.placement if r.nodes) < w.desired_replicas:
                self.waiting.append(w)

    def pool(self, name: str) -> int:
        return self._pools.get(name, 0)

    def take(self, pool: str, cards: int) -> None:
        self._pools[pool] = self.pool(pool) + cards
        self.changed += cards

    def release(self, pool: str, cards: int) -> None:
        self._pools[pool] = max(0, self.pool(pool) - cards)
        self.changed += cards

    def claim(self, workload: Workload, candidates: list[Candidate]) -> None:
        """The view with `workload`'s new replicas on their cards (not ready yet)."""
        first = max((r.index for r in workload.placement), default=-1) + 1
        added = tuple(
            ReplicaPlacement(index=first + i, nodes=c.nodes, gpus=c.gpus)
            for i, c in enumerate(candidates)
        )
        grown = workload.model_copy(
            update={
                "desired_replicas": workload.desired_replicas + len(added),
                "placement": (*workload.placement, *added),
            }
        )
        workloads = tuple(grown if w.name == workload.name else w for w in self.view.workloads)
        self.view = self.view.model_copy(update={"workloads": workloads})
