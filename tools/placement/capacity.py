"""Capacity accounting that understands how cards are shared.

A card is counted as what it physically is and who really uses it: an exclusive card is one slot;
a card shared through MPS or time-slicing offers as many slots as the device plugin is configured
to advertise (`Sharing.replicas`), each MPS client limited in memory and compute; a MIG card
offers one slot per slice, each with the slice's memory. The scheduler's own count
(`SchedulerView`) is never used as capacity: it can be wrong (the seeds' MPS card counted twice,
used 2 / capacity 1), and then it is an anomaly to report (tools/placement/anomalies.py), not a
reason to call a node full.

Memory comes from measurements when they are fresh. On a unified-memory node (GB10) the card has
no memory of its own and NVML's memory figures are often missing: the node's host memory is the
budget, less what the host measures in use, or less the catalogue's OS reserve and the estimated
size of the replicas placed there when nothing is measured — and the capacity says which.

`node_capacity(state)` counts every node of an observation (or the named ones); a ranking counts
once and ranks all its replicas on that count.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cached_property

from tools.model import ClusterState, Gpu, Metric, Node, SharingMode, Workload
from tools.placement.catalog import GIB, Catalog, default_catalog
from tools.placement.memoryfit import gib, memory_need

_MIG_MEMORY = re.compile(r"(\d+)g\.(\d+)gb", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class CardCapacity:
    """One physical card: its slots, its real clients and its memory.

    A value worked out inside the placement package from an already validated observation and
    never read from outside input: a plain frozen dataclass, not a pydantic model (a ranking
    counts every card of the fleet, 8,000 of them at 1,000 x 8).
    """

    uuid: str
    index: int
    model: str
    sharing: SharingMode
    slots: int
    """Schedulable devices the card offers (advertised replicas; at least its clients; >= 1)."""
    clients: tuple[str, ...]
    unified_memory: bool = False
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    memory_source: str = ""
    client_memory_limit_bytes: int | None = None
    """Memory one client may use: the MPS per-client limit or the MIG slice's memory."""
    client_compute_percent: int | None = None
    """MPS active thread percentage each client is capped at."""
    mig_profile: str | None = None

    @property
    def free_slots(self) -> int:
        return max(0, self.slots - len(self.clients))

    @property
    def memory_free_bytes(self) -> int | None:
        if self.memory_total_bytes is None:
            return None
        return max(0, self.memory_total_bytes - (self.memory_used_bytes or 0))


OpenCard = tuple[CardCapacity, SharingMode, int, bool, int | None, int | None]
"""A card with a free slot: (card, sharing, free slots, unified, client limit, free memory)."""


@dataclass(frozen=True, kw_only=True)
class NodeCapacity:
    """What one node offers, physically counted, with the reasons it may not be used.

    Like `CardCapacity`, a plain frozen dataclass made here from validated values (no slots:
    the derived tuples below are worked out once per node, when a ranking first reads them).
    """

    name: str
    schedulable: bool
    unschedulable: tuple[str, ...] = ()
    """Why nothing may be placed here whatever the workload tolerates: cordoned, not ready."""
    hard_taints: tuple[tuple[str, str], ...] = ()
    """NoSchedule/NoExecute taints as (key, description): only a toleration lets a pod in."""
    soft_taints: tuple[str, ...] = ()
    """PreferNoSchedule taints: allowed, ranked lower."""
    labels: dict[str, str] = field(default_factory=dict)
    unified_memory: bool = False
    cards: tuple[CardCapacity, ...] = ()
    memory_total_bytes: int
    memory_used_bytes: int
    memory_source: str
    replicas: dict[str, int] = field(default_factory=dict)
    """Replicas of each workload placed on the node."""
    notes: tuple[str, ...] = ()

    @cached_property
    def free_slots(self) -> int:
        return sum(c.free_slots for c in self.cards)

    @property
    def free_cards(self) -> int:
        """Whole cards nobody uses."""
        return sum(1 for c in self.cards if not c.clients)

    @cached_property
    def open_cards(self) -> tuple[OpenCard, ...]:
        """Cards with a free slot, flattened for the ranking's hot loop."""
        return tuple(
            (c, c.sharing, c.free_slots, c.unified_memory, c.client_memory_limit_bytes,
             c.memory_free_bytes)
            for c in self.cards
            if c.free_slots > 0
        )  # fmt: skip

    @cached_property
    def memory_free_bytes(self) -> int:
        return max(0, self.memory_total_bytes - self.memory_used_bytes)

    @cached_property
    def shape(self) -> tuple[object, ...]:
        """Everything but names and labels: nodes of one shape fit a demand the same way."""
        cards = tuple(
            (c.index, c.model, c.sharing, c.free_slots, len(c.clients), c.unified_memory,
             c.client_memory_limit_bytes, c.memory_free_bytes, c.memory_total_bytes)
            for c in self.cards
        )  # fmt: skip
        return (self.unified_memory, self.memory_free_bytes, self.memory_total_bytes, cards)


def _usable_bytes(metric: Metric) -> int | None:
    if metric.usable and metric.value is not None:
        return int(metric.value)
    return None


def replica_card_bytes(workload: Workload, catalog: Catalog) -> int | None:
    """Memory one replica of `workload` takes on each of its cards, from the catalogue."""
    if workload.model is None or workload.model not in catalog.models:
        return None
    spec = catalog.models[workload.model]
    context = min(workload.context_length or spec.max_context, spec.max_context)
    need = memory_need(spec, catalog, context, tensor_parallel=max(1, workload.cards_per_replica))
    return need.total_bytes


Placed = tuple[tuple[str, int, tuple[str, ...]], ...]
"""The replicas the workloads place on one node: (workload, replica index, card UUIDs)."""

Estimates = dict[str, int | None]
"""Workload -> memory one replica takes per card, from the catalogue (None: unknown)."""


def _placed_by_node(state: ClusterState) -> dict[str, Placed]:
    placed: dict[str, list[tuple[str, int, tuple[str, ...]]]] = {}
    for workload in state.workloads:
        for replica in workload.placement:
            for host in replica.nodes:
                placed.setdefault(host, []).append((workload.name, replica.index, replica.gpus))
    return {host: tuple(entries) for host, entries in placed.items()}


def _estimates(state: ClusterState, catalog: Catalog) -> Estimates:
    """Per-card memory of each workload's replicas."""
    return {w.name: replica_card_bytes(w, catalog) for w in state.workloads}


def _placed_by_card(placed: Placed) -> dict[str, list[str]]:
    """Card UUID -> the replicas placed on it ("workload/index"), for one node's placements."""
    by_card: dict[str, list[str]] = {}
    for workload, index, gpus in placed:
        for uuid in gpus:
            by_card.setdefault(uuid, []).append(f"{workload}/{index}")
    return by_card


def _clients(gpu: Gpu, by_card: dict[str, list[str]]) -> tuple[str, ...]:
    """A card's real clients: its own list and the replicas placed on it, sorted, once each."""
    placed = by_card.get(gpu.uuid)
    if not placed and not gpu.clients:
        return ()
    return tuple(sorted({*gpu.clients, *placed} if placed else set(gpu.clients)))


def _replicas(cards: tuple[CardCapacity, ...], placed: Placed) -> dict[str, int]:
    ids = {client for card in cards for client in card.clients}
    ids.update(f"{workload}/{index}" for workload, index, _ in placed)
    counts: dict[str, int] = {}
    for ident in ids:
        name = ident.rsplit("/", 1)[0]
        counts[name] = counts.get(name, 0) + 1
    return counts


def _card(
    gpu: Gpu, node: Node, clients: tuple[str, ...], estimates: Estimates, catalog: Catalog
) -> tuple[CardCapacity, list[str]]:
    notes: list[str] = []
    sharing = gpu.sharing
    slots = sharing.replicas if sharing.mode != "exclusive" else 1
    if sharing.mode in ("mps", "time-slicing"):
        slots = max(slots, len(clients))
    limit = sharing.mps_memory_limit_bytes if sharing.mode == "mps" else None
    if sharing.mode == "mig" and sharing.mig_profile:
        match = _MIG_MEMORY.search(sharing.mig_profile)
        limit = int(match.group(2)) * 10**9 if match else None
    total = _usable_bytes(gpu.memory_total_bytes)
    used = _usable_bytes(gpu.memory_used_bytes)
    source = "nvml"
    if node.unified_memory:
        total, used, source = None, None, "host (unified memory)"
        if not gpu.memory_total_bytes.usable:
            notes.append(
                f"{gpu.model} {gpu.uuid}: NVML memory figures missing (unified memory): "
                "using the node's host memory instead"
            )
    else:
        if total is None:
            spec = catalog.gpus.get(gpu.model)
            total = round(spec.memory_gib * GIB) if spec else None
            source = "catalogue" if spec else "unknown"
            notes.append(
                f"{gpu.model} {gpu.uuid}: memory.total missing; "
                + (f"{gib(total)} from the catalogue" if total else "card memory unknown")
            )
        if used is None:
            used = 0
            for client in clients:
                size = estimates.get(client.rsplit("/", 1)[0])
                size = size if size is not None else limit
                if size is None:
                    notes.append(f"{gpu.uuid}: memory of client {client} unknown")
                used += size or 0
            source += ", used estimated from clients"
    card = CardCapacity(
        uuid=gpu.uuid,
        index=gpu.index,
        model=gpu.model,
        sharing=sharing.mode,
        slots=max(1, slots),
        clients=clients,
        unified_memory=node.unified_memory,
        memory_total_bytes=total,
        memory_used_bytes=used,
        memory_source=source,
        client_memory_limit_bytes=limit,
        client_compute_percent=sharing.mps_active_thread_percentage,
        mig_profile=sharing.mig_profile if sharing.mode == "mig" else None,
    )
    return card, notes


def _host_memory(
    node: Node, cards: tuple[CardCapacity, ...], estimates: Estimates, catalog: Catalog
) -> tuple[int, str, list[str]]:
    metric = node.memory_used_bytes
    if metric.usable and metric.value is not None:
        return int(metric.value), "host use measured", []
    if not node.unified_memory:
        return 0, "host use not measured", []
    used = catalog.unified_os_reserve_bytes
    notes = [f"host memory in use {metric.status}: {gib(used)} OS reserve assumed"]
    for card in cards:
        for client in card.clients:
            size = estimates.get(client.rsplit("/", 1)[0])
            if size is None:
                notes.append(f"memory of client {client} unknown")
            used += size or 0
    return used, "host use not measured: OS reserve + estimated replicas", notes


def _node(node: Node, placed: Placed, estimates: Estimates, catalog: Catalog) -> NodeCapacity:
    blocked: list[str] = []
    if node.cordoned:
        blocked.append("cordoned")
    if not node.ready:
        blocked.append("not ready")
    hard = tuple(
        (t.key, f"tainted {t.key}={t.value}:{t.effect}")
        for t in node.taints
        if t.effect in ("NoSchedule", "NoExecute")
    )
    soft = tuple(f"{t.key}={t.value}" for t in node.taints if t.effect == "PreferNoSchedule")
    notes: list[str] = []
    cards: list[CardCapacity] = []
    by_card = _placed_by_card(placed)
    for gpu in sorted(node.gpus, key=lambda g: (g.index, g.uuid)):
        card, card_notes = _card(gpu, node, _clients(gpu, by_card), estimates, catalog)
        cards.append(card)
        notes.extend(card_notes)
    used, source, host_notes = _host_memory(node, tuple(cards), estimates, catalog)
    notes.extend(host_notes)
    return NodeCapacity(
        name=node.name,
        schedulable=not blocked and not hard,
        unschedulable=tuple(blocked),
        hard_taints=hard,
        soft_taints=soft,
        labels=node.labels,
        unified_memory=node.unified_memory,
        cards=tuple(cards),
        memory_total_bytes=node.memory_total_bytes,
        memory_used_bytes=min(used, node.memory_total_bytes),
        memory_source=source,
        replicas=_replicas(tuple(cards), placed),
        notes=tuple(notes),
    )


def node_capacity(
    state: ClusterState,
    catalog: Catalog | None = None,
    *,
    names: Collection[str] | None = None,
) -> dict[str, NodeCapacity]:
    """Every node's capacity, by name; only the nodes in `names` when given (a ranking that
    places on one pool's nodes counts those alone)."""
    catalog = catalog or default_catalog()
    placed_by_node = _placed_by_node(state)
    estimates = _estimates(state, catalog)
    return {
        node.name: _node(node, placed_by_node.get(node.name, ()), estimates, catalog)
        for node in state.nodes
        if names is None or node.name in names
    }
