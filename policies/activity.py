"""Whether a pool is busy right now, read from fresh metrics only.

A pool is busy when one of its workloads has a queue deeper than `activity.busy_queue_depth` or
one of the cards its replicas use is above `activity.busy_utilization_percent`. It is idle only
when every reading that could say busy is fresh and none does: a card of a placed replica
without a fresh utilization reading (its exporter down, its node lost) leaves the answer None
(unknown) however empty the queue looks, since a job may be running there. With no fresh
reading at all the answer is None too; None never counts as idle.
"""

from __future__ import annotations

from policies.model import Policy
from tools.model import ClusterState, Derived, Node


def pool_busy(state: ClusterState, pool: str, policy: Policy) -> bool | None:
    """True busy, False idle, None when no fresh metric tells."""
    limits = policy.activity
    seen = False
    blind = False
    """A placed replica's card has no fresh reading: an empty queue alone proves nothing."""
    for workload in state.pool_workloads(pool):
        depth = workload.queue_depth
        if depth.usable and depth.value is not None:
            seen = True
            if depth.value > limits.busy_queue_depth:
                return True
        for replica in workload.placement:
            for node_name in replica.nodes:
                node = state.node(node_name)
                if node is None:
                    continue
                readings = _utilization(node)
                for uuid in replica.gpus:
                    if uuid in readings:
                        seen = True
                        if readings[uuid] > limits.busy_utilization_percent:
                            return True
                    else:
                        blind = True
    return False if seen and not blind else None


def _fresh_utilization(node: Node) -> dict[str, float]:
    """The node's cards that have a fresh utilization reading, and the reading.

    Derived once per version of the node: between two scrapes a node's object is shared by
    successive observations, so a 1,000-node fleet reads only the nodes scraped since."""
    return {g.uuid: g.utilization.value or 0.0 for g in node.gpus if g.utilization.usable}


_utilization = Derived(_fresh_utilization)
