"""Faults assess reports that no planner action fixes: shared-card accounting, degraded links.

A card counted twice by the scheduler (the seeds' MPS fault) and a link path running at a
fraction of its nominal speed or on a changed RoCE GID index are facts to show, log and let the
policy weigh (a rotation into a mode spanning a degraded link is refused there); they do not by
themselves call a planner.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

from agent.signals.model import LinkSignal
from tools.model import ClusterState, Node, Workload


def sharing_suspects(state: ClusterState) -> ClusterState:
    """The part of `state` where an accounting anomaly is possible at all.

    A node whose scheduler count does not exceed what it advertises, and whose cards are each
    exclusive with at most one client, cannot hold one; skipping those keeps a 1,000-node tick
    cheap. Placement's `sharing_anomalies` then judges the rest exactly as it would the whole.
    """
    uses = Counter(chain.from_iterable(_cards_placed(w) for w in state.workloads))
    shared = {uuid for uuid, count in uses.items() if count > 1}
    suspects = tuple(node for node in state.nodes if _suspect(node, shared))
    if len(suspects) == len(state.nodes):
        return state
    return state.model_copy(update={"nodes": suspects})


def _suspect(node: Node, shared: set[str]) -> bool:
    """Whether an accounting anomaly is possible on the node: its scheduler counts more than it
    advertises, a card is shared or has several clients, or a card is placed twice (`shared`)."""
    view = node.scheduler
    if view is not None and view.gpu_allocated > view.gpu_allocatable:
        return True
    return any(
        g.sharing.mode != "exclusive" or len(g.clients) > 1 or g.uuid in shared for g in node.gpus
    )


def _cards_placed(workload: Workload) -> tuple[str, ...]:
    return tuple(uuid for r in workload.placement for uuid in r.gpus)


def degraded_links(state: ClusterState, min_fraction: float) -> tuple[LinkSignal, ...]:
    """Link paths below `min_fraction` of nominal, of unknown speed, or on an unexpected GID."""
    found: list[LinkSignal] = []
    for link in state.links:
        for path in link.paths:
            fraction = path.fraction_of_nominal()
            gid = path.gid_index.value if path.gid_index.usable else None
            problems: list[str] = []
            if fraction is not None and fraction < min_fraction:
                problems.append(f"at {fraction:.0%} of its nominal {path.nominal_gbps:g} Gb/s")
            if fraction is None:
                problems.append("negotiated speed unknown")
            expected = link.configured_gid_index
            if gid is not None and expected is not None and int(gid) != expected:
                problems.append(f"GID index {int(gid)} where {expected} is configured")
            if problems:
                found.append(
                    LinkSignal(
                        link=link.name,
                        path=path.name,
                        fraction_of_nominal=fraction,
                        gid_index=gid,
                        expected_gid_index=expected,
                        problem="; ".join(problems),
                    )
                )
    return tuple(found)
