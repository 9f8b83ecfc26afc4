"""Capacity behind cordons: the cordoned nodes that would take one more replica if uncordoned.

A planner that finds no room must not go silent when the room is there but cordoned: Steward
lifts a cordon of its own when it needs the capacity again (the default policy lets it), and
says which node a person's cordon holds back (the finding `cordoned_capacity`), since only a
person may lift that one. Asked only when nothing fits; a cluster without cordons costs nothing.
"""

from __future__ import annotations

from tools.model import ClusterState, Node, Workload
from tools.placement.picking import pick_node

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
"""The taint a cordon puts on a node (lifted with it)."""


def room_behind_cordons(workload: Workload, state: ClusterState) -> list[Node]:
    """The cordoned, ready nodes that would fit one more replica of `workload` were their cordon
    lifted (each judged alone), Steward's own cordons first, then by name."""
    cordoned = sorted(
        (n for n in state.nodes if n.cordoned and n.ready),
        key=lambda n: (not n.cordoned_by_steward, n.name),
    )
    found: list[Node] = []
    for node in cordoned:
        lifted = node.model_copy(
            update={
                "cordoned": False,
                "cordoned_by_steward": False,
                "taints": tuple(t for t in node.taints if t.key != UNSCHEDULABLE_TAINT),
                "version": "",  # not the producer's node any more: counted afresh
            }
        )
        nodes = tuple(lifted if n.name == node.name else n for n in state.nodes)
        what_if = state.model_copy(update={"nodes": nodes})
        if any(node.name in c.nodes for c in pick_node(workload, what_if)):
            found.append(node)
    return found
