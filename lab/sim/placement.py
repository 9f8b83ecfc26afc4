"""Where a replica can go: the simulated scheduler and its card and memory accounting.

A replica needs `nodes_per_replica` nodes that match its node selector and its pool's, each
schedulable (ready, not cordoned, not refusing pods), each with enough cards that have a free
device slot (an MPS or time-sliced card has `sharing.replicas` slots) and enough free memory for
its share of the replica. On a unified-memory node (GB10) the card's memory is the host's, less
what the OS holds. This is what makes the GX10 modes exclusive: `beast` needs 118 GiB on each
GX10, a resident holds 110 GiB of one, so they cannot all be up at once.

The scheduler refuses every pod on a node where the `mps_double_count` fault is active and the
node's shared card is over-allocated in its own count (the seeds' used 2 / capacity 1).
"""

from __future__ import annotations

import math

from lab.sim.faults import FaultBook
from lab.sim.profiles import GIB, CardSpec, NodeSpec, Profile, WorkloadSpec
from lab.sim.state import Replica, SimState, card_uuid
from tools.labels import matches
from tools.placement.demand import ZONE_LABEL

MAX_REASONS = 4
"""Nodes named in a refusal: enough to act on, short enough to read."""


def gib(n: float) -> str:
    return f"{n / GIB:.0f} GiB"


class Placer:
    """Card occupancy and the first-fit placement of replicas (deterministic: node order)."""

    def __init__(self, profile: Profile, state: SimState, faults: FaultBook) -> None:
        self.profile = profile
        self.state = state
        self.faults = faults
        self.nodes: dict[str, NodeSpec] = {n.name: n for n in profile.nodes}
        self.node_cards: dict[str, list[str]] = {}
        self.card_spec: dict[str, CardSpec] = {}
        self.card_index: dict[str, int] = {}
        for n in profile.nodes:
            uuids = [card_uuid(n.name, i) for i in range(len(n.cards))]
            self.node_cards[n.name] = uuids
            for i, (u, c) in enumerate(zip(uuids, n.cards, strict=True)):
                self.card_spec[u] = c
                self.card_index[u] = i
        self.pool_selector = {p.name: p.node_selector for p in profile.pools}
        self.zoned = any(ZONE_LABEL in n.labels for n in profile.nodes)
        """Some node names its zone: replicas spread over zones (see _spread)."""
        self.clients: dict[str, dict[str, int]] = {u: {} for u in self.card_spec}
        """Per card: client replica -> bytes it holds there."""
        self.owners: dict[str, Replica] = {}
        """Placed replicas by client name (`workload/index`)."""
        self.slots: dict[str, int] = {
            n: sum(self.card_spec[u].sharing.replicas for u in uuids)
            for n, uuids in self.node_cards.items()
        }
        self._selected: dict[tuple[tuple[str, str], ...], list[str]] = {}
        self._card_set = {n: set(uuids) for n, uuids in self.node_cards.items()}
        self.used: dict[str, int] = dict.fromkeys(self.node_cards, 0)
        """Per node: card device slots taken (what the scheduler counts as allocated)."""
        self.rebuild()

    def rebuild(self) -> None:
        for c in self.clients.values():
            c.clear()
        self.owners.clear()
        self.used = dict.fromkeys(self.node_cards, 0)
        for name, run in self.state.workloads.items():
            spec = next(w for w in self.profile.workloads if w.name == name)
            for r in run.replicas:
                if r.nodes:
                    self.bind(spec, r, r.nodes, r.cards)

    # -- accounting -----------------------------------------------------------------------------

    def card_capacity(self, uuid: str, node: NodeSpec) -> int:
        spec = self.card_spec[uuid]
        return (
            spec.memory_bytes - node.os_memory_bytes if node.unified_memory else spec.memory_bytes
        )

    def card_used(self, uuid: str) -> int:
        return sum(self.clients[uuid].values())

    def bind(self, spec: WorkloadSpec, r: Replica, nodes: list[str], cards: list[str]) -> None:
        r.nodes, r.cards = list(nodes), list(cards)
        per_card = spec.memory_per_node_bytes // max(1, self._cards_per_node(spec))
        for u in cards:
            self.clients[u][r.client] = per_card
        for n in nodes:
            self.used[n] += sum(1 for u in cards if u in self._card_set[n])
        if r.index >= 0:  # trial replicas (negative indices) are not owners
            self.owners[r.client] = r

    def release(self, r: Replica) -> None:
        for n in r.nodes:
            self.used[n] -= sum(1 for u in r.cards if u in self._card_set[n])
        for u in r.cards:
            self.clients[u].pop(r.client, None)
        if self.owners.get(r.client) is r:
            del self.owners[r.client]
        r.nodes, r.cards = [], []

    @staticmethod
    def _cards_per_node(spec: WorkloadSpec) -> int:
        return math.ceil(spec.cards_per_replica / spec.nodes_per_replica)

    def scheduler_counts(self, node: str, t: float) -> tuple[int, int]:
        """(gpu allocatable, gpu allocated) as the scheduler counts them on a node."""
        allocated = self.used[node]
        if self.faults.mps_double_count(node, t):
            return len(self.node_cards[node]), allocated
        return self.slots[node], allocated

    # -- placement ------------------------------------------------------------------------------

    def refusal(self, node: str, t: float) -> str | None:
        """Why the scheduler puts nothing on this node now, or None."""
        run = self.state.nodes[node]
        if run.lost:
            return f"{node} is NotReady (lost)"
        if run.cordoned:
            return f"{node} is cordoned"
        allocatable, allocated = self.scheduler_counts(node, t)
        if allocated > allocatable:
            return (
                f"{node}: the scheduler counts nvidia.com/gpu {allocated} allocated / "
                f"{allocatable} allocatable (MPS replicas not advertised) and refuses every pod"
            )
        return None

    def candidates(self, spec: WorkloadSpec) -> list[str]:
        selector = {**self.pool_selector.get(spec.pool, {}), **spec.node_selector}
        key = tuple(sorted(selector.items()))
        if key not in self._selected:
            self._selected[key] = [
                n.name for n in self.profile.nodes if matches(n.labels, selector)
            ]
        return self._selected[key]

    def find(
        self, spec: WorkloadSpec, t: float, pinned: str | None = None
    ) -> tuple[list[str], list[str]] | str:
        """Nodes and cards for one more replica, or a message saying why there are none."""
        candidates = self.candidates(spec)
        if self.zoned and pinned is None:
            candidates = self._spread(spec, candidates)
        if pinned is not None:
            if pinned not in self.nodes:
                return f"no node named {pinned!r}"
            if pinned not in candidates:
                return f"{pinned} does not match the node selector of {spec.name}"
            # A pinned multi-node replica takes the pinned node first, then the others.
            candidates = [pinned, *(n for n in candidates if n != pinned)]
        need_cards = self._cards_per_node(spec)
        per_card = spec.memory_per_node_bytes // max(1, need_cards)
        nodes: list[str] = []
        cards: list[str] = []
        reasons: list[str] = []
        for node in candidates:
            if self.slots[node] - self.used[node] < need_cards and len(reasons) >= MAX_REASONS:
                continue  # full, and enough reasons collected: skip it cheaply
            refused = self.refusal(node, t)
            if refused is not None:
                reasons.append(refused)
            else:
                got = self._cards_on(node, need_cards, per_card, reasons)
                if got is not None:
                    nodes.append(node)
                    cards.extend(got)
                    if len(nodes) == spec.nodes_per_replica:
                        return nodes, cards
            if pinned is not None and node == pinned and not nodes:
                break
        if not candidates:
            reasons.append("no node matches its node selector")
        span = f"{spec.nodes_per_replica} nodes" if spec.nodes_per_replica > 1 else "a node"
        return f"no room for a replica of {spec.name} ({span}): " + "; ".join(reasons[:MAX_REASONS])

    def _spread(self, spec: WorkloadSpec, candidates: list[str]) -> list[str]:
        """Nodes in the zones holding fewest of the workload's replicas first (kube-scheduler's
        default topology spread over zones, a soft one), node order within a zone."""
        per_zone: dict[str, int] = {}
        for r in self.owners.values():
            if r.workload == spec.name:
                for n in r.nodes:
                    zone = self.nodes[n].labels.get(ZONE_LABEL, "")
                    per_zone[zone] = per_zone.get(zone, 0) + 1
        return sorted(
            candidates, key=lambda n: per_zone.get(self.nodes[n].labels.get(ZONE_LABEL, ""), 0)
        )

    def _cards_on(
        self, node: str, need: int, per_card: int, reasons: list[str]
    ) -> list[str] | None:
        node_spec = self.nodes[node]
        free: list[str] = []
        best_free = 0
        holders: list[str] = []
        for u in self.node_cards[node]:
            slots = self.card_spec[u].sharing.replicas - len(self.clients[u])
            room = self.card_capacity(u, node_spec) - self.card_used(u)
            best_free = max(best_free, room)
            holders.extend(self.clients[u])
            if slots >= 1 and room >= per_card:
                free.append(u)
        if len(free) >= need:
            return free[:need]
        held = f" (held by {', '.join(holders)})" if holders else ""
        if need > len(self.node_cards[node]):
            reasons.append(f"{node} has {len(self.node_cards[node])} card(s), needs {need}")
        else:
            reasons.append(
                f"{node} needs {need} card(s) with {gib(per_card)} free and a free slot; "
                f"best has {gib(best_free)} free{held}"
            )
        return None
