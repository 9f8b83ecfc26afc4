"""Whether one node can take one replica's share, and what it would have left.

`evaluate` checks a node's capacity against a demand: hard exclusions first (cordoned, not ready,
an untolerated NoSchedule/NoExecute taint, the pool's node selector), then cards (a free slot in
a sharing mode the workload accepts, enough card memory, within an MPS client's memory limit or a
MIG slice), then host memory on a unified-memory node. It reads an `Overlay` of what earlier
replicas of the same ranking already took, so placing many replicas never over-commits a card.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.placement.capacity import CardCapacity, NodeCapacity
from tools.placement.demand import Demand, PlacementHints
from tools.placement.memoryfit import gib

_SHARED = ("mps", "time-slicing")
_SHOWN_CARDS = 4


@dataclass
class Overlay:
    """What replicas chosen earlier in this ranking take, on top of the observed state."""

    slots: dict[str, int] = field(default_factory=dict)
    card_bytes: dict[str, int] = field(default_factory=dict)
    host_bytes: dict[str, int] = field(default_factory=dict)
    replicas: dict[str, int] = field(default_factory=dict)

    def take(self, fit: NodeFit, demand: Demand) -> None:
        for card in fit.cards:
            self.slots[card.uuid] = self.slots.get(card.uuid, 0) + 1
            if demand.card_bytes is not None and not card.unified_memory:
                self.card_bytes[card.uuid] = self.card_bytes.get(card.uuid, 0) + demand.card_bytes
        if fit.host_checked and demand.host_bytes is not None:
            self.host_bytes[fit.node] = self.host_bytes.get(fit.node, 0) + demand.host_bytes
        self.replicas[fit.node] = self.replicas.get(fit.node, 0) + 1


@dataclass(slots=True)
class NodeFit:
    """One node's answer for one replica share: the cards it would use and what is left."""

    node: str
    cards: tuple[CardCapacity, ...]
    whole_cards: int
    slots_after: int
    memory_after: int | None
    memory_total: int | None
    host_checked: bool
    replicas_here: int
    preference: int
    soft_taints: tuple[str, ...]


def _card_problem(card: CardCapacity, demand: Demand, overlay: Overlay) -> str:
    """Why `card` cannot take a replica share, in words (only built for a rejection)."""
    label = f"{card.uuid} ({card.model}, {card.sharing})"
    if card.sharing not in demand.sharing:
        return f"{label}: {card.sharing} is not accepted ({', '.join(demand.sharing)})"
    if card.free_slots - overlay.slots.get(card.uuid, 0) <= 0:
        return f"{label}: no free slot (used by {', '.join(card.clients) or 'earlier replicas'})"
    need = demand.card_bytes or 0
    limit = card.client_memory_limit_bytes
    if limit is not None and need > limit:
        return f"{label}: needs {gib(need)}, a client may use {gib(limit)}"
    free = (card.memory_free_bytes or 0) - overlay.card_bytes.get(card.uuid, 0)
    return f"{label}: needs {gib(need)}, {gib(free)} free"


def _usable_cards(
    cap: NodeCapacity, demand: Demand, overlay: Overlay
) -> list[tuple[CardCapacity, int | None]]:
    """The cards that can take a replica share, with their free memory after (None: unknown).

    The hot path of a large ranking: plain comparisons, no strings.
    """
    need = demand.card_bytes
    accepted = demand.sharing
    slots_taken = overlay.slots
    bytes_taken = overlay.card_bytes
    usable: list[tuple[CardCapacity, int | None]] = []
    for card in cap.cards:
        if card.sharing not in accepted:
            continue
        free_slots = card.free_slots
        if slots_taken:
            free_slots -= slots_taken.get(card.uuid, 0)
        if free_slots <= 0:
            continue
        if need is None or card.unified_memory:
            usable.append((card, None))
            continue
        limit = card.client_memory_limit_bytes
        if limit is not None and need > limit:
            continue
        free = card.memory_free_bytes
        if free is None:
            usable.append((card, None))
            continue
        if bytes_taken:
            free -= bytes_taken.get(card.uuid, 0)
        if need <= free:
            usable.append((card, free - need))
    return usable


def _card_order(card: CardCapacity, demand: Demand, overlay: Overlay) -> tuple[int, int]:
    in_use = len(card.clients) + overlay.slots.get(card.uuid, 0)
    if demand.accepts_shared:
        # A sharing-happy client joins a card already shared before it takes a whole one.
        return (0 if card.sharing in _SHARED and in_use else 1, card.index)
    return (in_use, card.index)


def exclusions(cap: NodeCapacity, demand: Demand, hints: PlacementHints) -> list[str]:
    """Reasons independent of load that keep every replica of this demand off the node."""
    labels = cap.labels
    if (
        cap.schedulable
        and (cap.cards or not demand.cards_per_node)
        and cap.name not in hints.exclude_nodes
        and all(labels.get(k) == v for k, v in demand.node_selector.items())
    ):
        return []
    reasons = list(cap.unschedulable)
    reasons += [desc for key, desc in cap.hard_taints if key not in hints.tolerations]
    if cap.name in hints.exclude_nodes:
        reasons.append("excluded by the placement hints")
    missing = {k: v for k, v in demand.node_selector.items() if cap.labels.get(k) != v}
    if missing:
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
        reasons.append(f"labels do not match the pool's node selector ({wanted})")
    if demand.cards_per_node and not cap.cards:
        reasons.append("has no GPU")
    return reasons


def evaluate(
    cap: NodeCapacity, demand: Demand, hints: PlacementHints, overlay: Overlay
) -> NodeFit | list[str]:
    """The node's fit for one replica share, or the reasons it cannot take one now."""
    excluded = exclusions(cap, demand, hints)
    if excluded:
        return excluded
    usable = _usable_cards(cap, demand, overlay)
    want = demand.cards_per_node
    if len(usable) < want:
        problems = [
            _card_problem(card, demand, overlay)
            for card in cap.cards
            if all(card is not u for u, _ in usable)
        ]
        shown = problems[:_SHOWN_CARDS]
        if len(problems) > _SHOWN_CARDS:
            shown.append(f"and {len(problems) - _SHOWN_CARDS} more")
        return [f"needs {want} card slot(s), {len(usable)} usable: " + "; ".join(shown)]
    if want == 0:
        chosen: list[tuple[CardCapacity, int | None]] = []
    elif want == len(usable):
        chosen = usable
    else:
        chosen = sorted(usable, key=lambda pair: _card_order(pair[0], demand, overlay))[:want]
    cards = tuple(card for card, _ in chosen)
    memory_after: int | None = None
    memory_total: int | None = None
    host_checked = cap.unified_memory and demand.host_bytes is not None
    if host_checked and demand.host_bytes is not None:
        free = cap.memory_free_bytes - overlay.host_bytes.get(cap.name, 0)
        if demand.host_bytes > free:
            return [
                f"needs {gib(demand.host_bytes)} of unified memory, {gib(free)} free "
                f"({cap.memory_source})"
            ]
        memory_after, memory_total = free - demand.host_bytes, cap.memory_total_bytes
    elif chosen and all(after is not None for _, after in chosen):
        memory_after = sum(after or 0 for _, after in chosen)
        memory_total = sum(card.memory_total_bytes or 0 for card in cards)
    taken = sum(overlay.slots.get(c.uuid, 0) for c in cap.cards) if overlay.slots else 0
    preference = len(hints.prefer_gpu_models)
    for card in cards:
        if card.model in hints.prefer_gpu_models:
            preference = min(preference, hints.prefer_gpu_models.index(card.model))
    return NodeFit(
        node=cap.name,
        cards=cards,
        whole_cards=sum(
            1 for card in cards if not card.clients and not overlay.slots.get(card.uuid)
        ),
        slots_after=cap.free_slots - taken - want,
        memory_after=memory_after,
        memory_total=memory_total,
        host_checked=host_checked,
        replicas_here=cap.replicas.get(demand.workload, 0) + overlay.replicas.get(cap.name, 0),
        preference=preference,
        soft_taints=cap.soft_taints,
    )
