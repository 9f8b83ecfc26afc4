"""Accounting anomalies: where the scheduler's count of cards disagrees with the cards.

The seeds' worst day: one card shared through MPS by a TTS service and a worker, and the
scheduler counted it twice — `used: 2, capacity: 1` — so it refused every further pod on the
node, even pods that wanted no GPU. The device plugin advertised the card once because its
sharing configuration did not declare the MPS replicas. Steward detects that shape, explains it
and names the fix, and counts the physical card and its real clients meanwhile (placement never
treats such a node as full because of it).
"""

from __future__ import annotations

from typing import Literal

from tools.bases import Frozen
from tools.model import ClusterState, Node
from tools.placement.capacity import CardCapacity, NodeCapacity, node_capacity
from tools.placement.catalog import Catalog, default_catalog

AnomalyKind = Literal[
    "mps_double_count",
    "scheduler_overcount",
    "card_oversubscribed",
    "mps_memory_overcommitted",
]
_SHARED = ("mps", "time-slicing")


class Anomaly(Frozen):
    """One accounting fault, typed, with what it means and how to fix it."""

    kind: AnomalyKind
    node: str
    gpus: tuple[str, ...] = ()
    severity: Literal["warning", "critical"]
    summary: str
    """One line, without the node's name (it is in `node`)."""
    explanation: str
    fix: str
    scheduler_allocatable: int | None = None
    scheduler_allocated: int | None = None
    physical_cards: int = 0
    clients: tuple[str, ...] = ()


def _plugin_fix(cards: list[CardCapacity]) -> str:
    mode = "mps" if any(c.sharing == "mps" for c in cards) else "timeSlicing"
    replicas = max(max(c.slots, len(c.clients)) for c in cards)
    return (
        "declare the sharing in the NVIDIA device plugin's config so the card is advertised "
        f"once per client: sharing: {{{mode}: {{resources: [{{name: nvidia.com/gpu, "
        f"replicas: {replicas}}}]}}}} (or add renameByDefault: true to advertise it as "
        "nvidia.com/gpu.shared), then restart the device-plugin DaemonSet on the node; "
        "its allocatable nvidia.com/gpu then counts the shared slots. Until then Steward "
        "counts the physical card and its real clients and keeps the node in play."
    )


def _scheduler_anomaly(node: Node, cap: NodeCapacity) -> Anomaly | None:
    view = node.scheduler
    if view is None or view.gpu_allocated <= view.gpu_allocatable:
        return None
    excess = view.gpu_allocated - view.gpu_allocatable
    shared = [c for c in cap.cards if c.sharing in _SHARED and len(c.clients) > 1]
    extra_clients = sum(len(c.clients) - 1 for c in shared)
    clients = tuple(client for c in shared for client in c.clients)
    counts = (
        f"the scheduler counts {view.gpu_allocated} GPUs allocated of "
        f"{view.gpu_allocatable} allocatable on {node.name}"
    )
    if shared and extra_clients >= excess and view.gpu_allocatable <= len(cap.cards):
        how = " and ".join(
            f"{c.model} {c.uuid} shared through {c.sharing.upper()} by {', '.join(c.clients)}"
            for c in shared
        )
        return Anomaly(
            kind="mps_double_count",
            node=node.name,
            gpus=tuple(c.uuid for c in shared),
            severity="critical",
            summary="shared card counted once per client "
            f"(used {view.gpu_allocated} / capacity {view.gpu_allocatable})",
            explanation=(
                f"{counts}, but it has {len(cap.cards)} physical card(s): {how}. The device "
                "plugin advertises the card as one device, so each client's request counts as a "
                "whole GPU; the node looks over-committed and the scheduler refuses every "
                "further pod on it, including pods that want no GPU."
            ),
            fix=_plugin_fix(shared),
            scheduler_allocatable=view.gpu_allocatable,
            scheduler_allocated=view.gpu_allocated,
            physical_cards=len(cap.cards),
            clients=clients,
        )
    real = sum(len(c.clients) for c in cap.cards)
    return Anomaly(
        kind="scheduler_overcount",
        node=node.name,
        severity="critical",
        summary=f"scheduler counts {view.gpu_allocated} GPUs allocated of {view.gpu_allocatable}",
        explanation=(
            f"{counts}, more than it offers; the cards show {real} client(s) on "
            f"{len(cap.cards)} card(s), so the count does not match what runs."
        ),
        fix=(
            f"look for pods on {node.name} stuck Terminating or holding nvidia.com/gpu after "
            "their containers exited (kubectl describe node), and restart the device-plugin "
            "pod there so it re-registers its devices."
        ),
        scheduler_allocatable=view.gpu_allocatable,
        scheduler_allocated=view.gpu_allocated,
        physical_cards=len(cap.cards),
    )


def _card_anomalies(node: str, card: CardCapacity) -> list[Anomaly]:
    found: list[Anomaly] = []
    over = (card.sharing == "exclusive" and len(card.clients) > 1) or (
        card.sharing == "mig" and len(card.clients) > card.slots
    )
    if over:
        found.append(
            Anomaly(
                kind="card_oversubscribed",
                node=node,
                gpus=(card.uuid,),
                severity="critical",
                summary=f"{card.uuid} ({card.sharing}) has {len(card.clients)} clients "
                f"for {card.slots} slot(s)",
                explanation=(
                    f"{', '.join(card.clients)} all use {card.model} {card.uuid}, which is "
                    f"configured as {card.sharing} with {card.slots} slot(s): they contend for "
                    "memory with no isolation and one of them may fail to allocate."
                ),
                fix=(
                    "move the extra clients to free cards, or configure the card for sharing "
                    "(MPS with per-client memory limits) in the device plugin's config."
                ),
                physical_cards=1,
                clients=card.clients,
            )
        )
    limit = card.client_memory_limit_bytes
    total = card.memory_total_bytes
    if card.sharing == "mps" and limit is not None and total is not None:
        promised = limit * max(card.slots, len(card.clients))
        if promised > total:
            found.append(
                Anomaly(
                    kind="mps_memory_overcommitted",
                    node=node,
                    gpus=(card.uuid,),
                    severity="warning",
                    summary=f"MPS limits on {card.uuid} promise more memory than it has",
                    explanation=(
                        f"{max(card.slots, len(card.clients))} MPS clients x "
                        f"{limit / 1024**3:.1f} GiB each exceed the card's "
                        f"{total / 1024**3:.1f} GiB: a client can run out before its limit."
                    ),
                    fix=(
                        "lower CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (the plugin's per-client "
                        "memory limit) to total / replicas, or advertise fewer replicas."
                    ),
                    physical_cards=1,
                    clients=card.clients,
                )
            )
    return found


def sharing_anomalies(state: ClusterState, catalog: Catalog | None = None) -> list[Anomaly]:
    """Every accounting anomaly in `state`, by node name."""
    return anomalies_in(state, node_capacity(state, catalog or default_catalog()))


def anomalies_in(state: ClusterState, capacity: dict[str, NodeCapacity]) -> list[Anomaly]:
    """Every accounting anomaly of the nodes of `state` counted in `capacity`, by node name."""
    found: list[Anomaly] = []
    for node in sorted(state.nodes, key=lambda n: n.name):
        cap = capacity.get(node.name)
        if cap is not None:
            found.extend(_node_anomalies(node, cap))
    return found


def _node_anomalies(node: Node, cap: NodeCapacity) -> tuple[Anomaly, ...]:
    found: list[Anomaly] = []
    scheduler = _scheduler_anomaly(node, cap)
    if scheduler is not None:
        found.append(scheduler)
    for card in cap.cards:
        found.extend(_card_anomalies(node.name, card))
    return tuple(found)
