"""Whether a pool is busy right now, read from fresh metrics only.

A pool is busy when one of its workloads has a queue deeper than `activity.busy_queue_depth` or
one of the cards its replicas use is above `activity.busy_utilization_percent`. It is idle only
when some fresh reading says so and none says otherwise; with no fresh reading at all the answer
is None (unknown), which never counts as idle.
"""

from __future__ import annotations

from policies.model import Policy
from tools.model import ClusterState, Derived, Node


def pool_busy(state: ClusterState, pool: str, policy: Policy) -> bool | None:
    """True busy, False idle, None when no fresh metric tells."""
    limits = policy.activity
    readings = _readings(limits.busy_utilization_percent)
    seen = False
    for workload in state.pool_workloads(pool):
        depth = workload.queue_depth
        if depth.usable and depth.value is not None:
            seen = True
            if depth.value > limits.busy_queue_depth:
                return True
        for replica in workload.placement:
            cards = replica.gpus
            if not cards:
                continue
            for node_name in replica.nodes:
                node = state.node(node_name)
                if node is None:
                    continue
                fresh, busy = readings(node)
                if busy and not busy.isdisjoint(cards):
                    return True
                if not seen and not fresh.isdisjoint(cards):
                    seen = True
    return False if seen else None


Cards = tuple[frozenset[str], frozenset[str]]
"""A node's cards with a fresh utilization reading, and those of them above the threshold."""


def _readings(threshold: float) -> Derived[Node, Cards]:
    """Per node, which cards read fresh and which busy: derived once per version of the node
    (between two scrapes a node keeps its version, so a 1,000-node fleet reads only the nodes
    scraped since, however the observation was built), one table per threshold."""
    found = _by_threshold.get(threshold)
    if found is None:

        def cards(node: Node) -> Cards:
            fresh = [g for g in node.gpus if g.utilization.usable]
            busy = (g.uuid for g in fresh if (g.utilization.value or 0.0) > threshold)
            return frozenset(g.uuid for g in fresh), frozenset(busy)

        found = _by_threshold[threshold] = Derived(cards)
    return found


_by_threshold: dict[float, Derived[Node, Cards]] = {}
