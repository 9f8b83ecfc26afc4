"""Whether one node can take one replica's share, and what it would have left.

`evaluate` checks a node's capacity against a demand: hard exclusions first (cordoned, not ready,
an untolerated NoSchedule/NoExecute taint, the pool's node selector), then cards (a free slot in
a sharing mode the workload accepts, enough card memory, within an MPS client's memory limit or a
MIG slice), then host memory on a unified-memory node. It reads an `Overlay` of what earlier
replicas of the same ranking already took, so placing many replicas never over-commits a card.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.labels import matches, unmatched
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


Memo = dict[tuple[object, ...], tuple[NodeFit, tuple[int, ...]] | None]
"""A node shape's answer within one ranking: the fit and the positions of its cards, or None."""


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
    for card, sharing, free_slots, unified, limit, free_bytes in cap.open_cards:
        if sharing not in accepted:
            continue
        if slots_taken and free_slots - slots_taken.get(card.uuid, 0) <= 0:
            continue
        if need is None or unified:
            usable.append((card, None))
        elif limit is not None and need > limit:
            continue
        elif free_bytes is None:
            usable.append((card, None))
        else:
            free = free_bytes - bytes_taken.get(card.uuid, 0) if bytes_taken else free_bytes
            if need <= free:
                usable.append((card, free - need))
    return usable


def _card_order(
    card: CardCapacity, demand: Demand, hints: PlacementHints, overlay: Overlay
) -> tuple[int, int, int]:
    ranks = hints.preference_ranks
    rank = ranks.get(card.model, len(ranks)) if ranks else 0
    in_use = len(card.clients)
    if overlay.slots:
        in_use += overlay.slots.get(card.uuid, 0)
    if demand.accepts_shared:
        # A sharing-happy client joins a card already shared before it takes a whole one.
        return (rank, 0 if card.sharing in _SHARED and in_use else 1, card.index)
    return (rank, in_use, card.index)


def _choose(
    usable: list[tuple[CardCapacity, int | None]],
    want: int,
    demand: Demand,
    hints: PlacementHints,
    overlay: Overlay,
) -> list[tuple[CardCapacity, int | None]]:
    """The `want` best usable cards: preferred model, then by sharing and use, then index."""
    if want == 0:
        return []
    if want == len(usable):
        return usable
    if want == 1:
        best, best_order = usable[0], _card_order(usable[0][0], demand, hints, overlay)
        for pair in usable[1:]:
            order = _card_order(pair[0], demand, hints, overlay)
            if order < best_order:
                best, best_order = pair, order
        return [best]
    return sorted(usable, key=lambda pair: _card_order(pair[0], demand, hints, overlay))[:want]


def admissible(cap: NodeCapacity, demand: Demand, hints: PlacementHints) -> bool:
    """The common case, cheaply: nothing keeps this demand off the node whatever its load."""
    labels = cap.labels
    tolerated = cap.schedulable or (
        not cap.unschedulable and all(key in hints.tolerations for key, _ in cap.hard_taints)
    )
    return (
        tolerated
        and (bool(cap.cards) or not demand.cards_per_node)
        and cap.name not in hints.exclude_nodes
        and matches(labels, demand.node_selector)
    )


def exclusions(cap: NodeCapacity, demand: Demand, hints: PlacementHints) -> list[str]:
    """Reasons independent of load that keep every replica of this demand off the node."""
    if admissible(cap, demand, hints):
        return []
    reasons = list(cap.unschedulable)
    reasons += [desc for key, desc in cap.hard_taints if key not in hints.tolerations]
    if cap.name in hints.exclude_nodes:
        reasons.append("excluded by the placement hints")
    missing = unmatched(cap.labels, demand.node_selector)
    if missing:
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
        reasons.append(f"labels do not match the pool's node selector ({wanted})")
    if demand.cards_per_node and not cap.cards:
        reasons.append("has no GPU")
    return reasons


def evaluate(
    cap: NodeCapacity,
    demand: Demand,
    hints: PlacementHints,
    overlay: Overlay,
    *,
    explain: bool = True,
    memo: Memo | None = None,
) -> NodeFit | list[str]:
    """The node's fit for one replica share, or the reasons it cannot take one now.

    With `explain=False` a rejection comes back as an empty list: nothing is put into words,
    which is most of the cost of rejecting a node on a large fleet. With a `memo`, a node that
    no earlier replica touched reuses the answer of a node of the same shape (a fleet is
    mostly alike nodes), with its own cards, name and replica count.
    """
    if not admissible(cap, demand, hints):
        excluded = exclusions(cap, demand, hints) if explain else []
        if excluded or not explain:
            return excluded
    if memo is None or explain or cap.name in overlay.replicas:
        return _fit(cap, demand, hints, overlay, explain=explain)
    shape = cap.shape
    if shape not in memo:
        result = _fit(cap, demand, hints, overlay, explain=False)
        if isinstance(result, list):
            memo[shape] = None
        else:
            positions = tuple(
                next(i for i, card in enumerate(cap.cards) if card is chosen)
                for chosen in result.cards
            )
            memo[shape] = (result, positions)
        return result
    hit = memo[shape]
    if hit is None:
        return []
    template, positions = hit
    cards = cap.cards
    return NodeFit(
        node=cap.name,
        cards=tuple(cards[i] for i in positions),
        whole_cards=template.whole_cards,
        slots_after=template.slots_after,
        memory_after=template.memory_after,
        memory_total=template.memory_total,
        host_checked=template.host_checked,
        replicas_here=cap.replicas.get(demand.workload, 0),
        preference=template.preference,
        soft_taints=cap.soft_taints,
    )


def _fit(
    cap: NodeCapacity, demand: Demand, hints: PlacementHints, overlay: Overlay, *, explain: bool
) -> NodeFit | list[str]:
    usable = _usable_cards(cap, demand, overlay)
    want = demand.cards_per_node
    if len(usable) < want:
        if not explain:
            return []
        problems = [
            _card_problem(card, demand, overlay)
            for card in cap.cards
            if all(card is not u for u, _ in usable)
        ]
        shown = problems[:_SHOWN_CARDS]
        if len(problems) > _SHOWN_CARDS:
            shown.append(f"and {len(problems) - _SHOWN_CARDS} more")
        return [f"needs {want} card slot(s), {len(usable)} usable: " + "; ".join(shown)]
    chosen = _choose(usable, want, demand, hints, overlay)
    ranks = hints.preference_ranks
    slots_taken = overlay.slots
    preference = len(ranks)
    whole = 0
    card_after = card_total = 0
    card_memory_known = bool(chosen)
    for card, after in chosen:
        if after is None:
            card_memory_known = False
        else:
            card_after += after
            card_total += card.memory_total_bytes or 0
        if not card.clients and not (slots_taken and slots_taken.get(card.uuid)):
            whole += 1
        if ranks:
            preference = min(preference, ranks.get(card.model, len(ranks)))
    memory_after: int | None = card_after if card_memory_known else None
    memory_total: int | None = card_total if card_memory_known else None
    host_checked = cap.unified_memory and demand.host_bytes is not None
    if host_checked and demand.host_bytes is not None:
        free = cap.memory_free_bytes - overlay.host_bytes.get(cap.name, 0)
        if demand.host_bytes > free:
            if not explain:
                return []
            return [
                f"needs {gib(demand.host_bytes)} of unified memory, {gib(free)} free "
                f"({cap.memory_source})"
            ]
        memory_after, memory_total = free - demand.host_bytes, cap.memory_total_bytes
    taken = sum(slots_taken.get(c.uuid, 0) for c in cap.cards) if slots_taken else 0
    here = cap.replicas.get(demand.workload, 0)
    if overlay.replicas:
        here += overlay.replicas.get(cap.name, 0)
    return NodeFit(
        node=cap.name,
        cards=tuple(card for card, _ in chosen),
        whole_cards=whole,
        slots_after=cap.free_slots - taken - want,
        memory_after=memory_after,
        memory_total=memory_total,
        host_checked=host_checked,
        replicas_here=here,
        preference=preference,
        soft_taints=cap.soft_taints,
    )
