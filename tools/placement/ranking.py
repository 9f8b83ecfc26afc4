"""Ranking nodes for a workload's replicas, each choice with its reasons.

A replica goes to one node, or — for a tensor-parallel group (`nodes_per_replica=2`) — to a pair
of nodes joined by a healthy `Link`. Every node (or pair) either fits, with the cards it would
use and what it would have left, or is rejected with the reasons. The order is deterministic:
no PreferNoSchedule taint first, then the preferred card model, then fewer whole cards taken for
a workload that can share, then the strategy (spread: fewest of the workload's replicas in the
node's failure domains — zone, then rack — then on the node, most left; pack: least left), then
the faster link, then the names.

`Ranking` holds one ranking's inputs; tools/placement/picking.py drives it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from tools.bases import Frozen
from tools.labels import matches
from tools.model import ClusterState, Link, Workload
from tools.placement.anomalies import Anomaly, anomalies_in
from tools.placement.capacity import NodeCapacity, node_capacity
from tools.placement.catalog import Catalog
from tools.placement.demand import Demand, PlacementHints, demand_of
from tools.placement.memoryfit import gib
from tools.placement.nodefit import Memo, NodeFit, Overlay, admissible, evaluate

Unit = tuple[str, ...]
SortKey = tuple[int, int, int, int, int, int, int, float, Unit]
KeyPrefix = tuple[int, int, int, int, int, int, int, float]
"""A sort key without its last element, the unit's names."""


class Candidate(Frozen):
    """A node (or linked pair) that fits one replica, and why it ranks where it does."""

    rank: int = Field(ge=1)
    """Position in the ranking (pick_node) or the replica's order (pick_nodes), from 1."""
    nodes: tuple[str, ...]
    gpus: tuple[str, ...] = ()
    link: str | None = None
    memory_free_after_bytes: int | None = None
    """Least memory left on any of the nodes after the fit (None where memory is unknown)."""
    free_slots_after: int
    reasons: tuple[str, ...]

    @property
    def node(self) -> str:
        return self.nodes[0]


class Rejection(Frozen):
    """A node (or pair) that cannot take a replica, and why."""

    nodes: tuple[str, ...]
    reasons: tuple[str, ...]


class Placement(Frozen):
    """The full answer for a workload: ranked candidates, rejections, the demand, anomalies."""

    workload: str
    demand: Demand
    candidates: tuple[Candidate, ...]
    rejected: tuple[Rejection, ...]
    anomalies: tuple[Anomaly, ...] = ()


def _link_problems(link: Link, hints: PlacementHints) -> tuple[list[str], float, str]:
    problems: list[str] = []
    shown: list[str] = []
    total = 0.0
    for path in link.paths:
        fraction = path.fraction_of_nominal()
        speed = path.negotiated_gbps.value
        if fraction is None or speed is None:
            shown.append(f"{path.name} not measured")
        else:
            total += speed
            shown.append(f"{path.name} {speed:.1f}/{path.nominal_gbps:.0f} Gb/s")
            if fraction < hints.min_link_fraction:
                problems.append(
                    f"link {link.name} path {path.name} at {fraction:.0%} of nominal "
                    f"({speed:.1f}/{path.nominal_gbps:.0f} Gb/s): reboot both nodes or reseat "
                    "the cable before a tensor-parallel group uses it"
                )
        gid = path.gid_index
        expected = link.configured_gid_index
        wrong_gid = gid.usable and gid.value is not None and expected is not None
        if wrong_gid and int(gid.value or 0) != expected:
            problems.append(
                f"link {link.name} path {path.name} uses GID index {int(gid.value or 0)}, "
                f"NCCL_IB_GID_INDEX expects {expected} (it changes after a reboot and "
                "NCCL does not warn): update the serving config"
            )
    return problems, total, f"linked by {link.name}: " + ", ".join(shown)


def _selected(caps: dict[str, NodeCapacity], selector: dict[str, str]) -> tuple[str, ...]:
    """The names of the nodes whose labels match `selector`, sorted."""
    return tuple(sorted(n for n, cap in caps.items() if matches(cap.labels, selector)))


class Ranking:
    """One ranking's fixed inputs and its running overlay."""

    def __init__(
        self,
        workload: Workload,
        state: ClusterState,
        hints: PlacementHints,
        catalog: Catalog,
        *,
        explain: bool,
    ) -> None:
        self.explain = explain
        self.memo: Memo | None = None if explain else {}
        self.state = state
        self.catalog = catalog
        self.hints = hints
        self.demand = demand_of(workload, state, hints, catalog)
        self.caps = node_capacity(state, catalog, names=self._counted(state))
        self.overlay = Overlay()
        self.anomalies = anomalies_in(state, self.caps)
        self.links: dict[Unit, tuple[Link, float, str]] = {}
        self.rejected: list[Rejection] = []
        self.domains = self._domains(workload, state)
        self.units = self._units()

    def _counted(self, state: ClusterState) -> frozenset[str] | None:
        """The nodes worth counting: without explanations, a single-node replica can only go
        to a node its pool's selector matches, so only those are counted (None: every node)."""
        if self.explain or self.demand.nodes_per_replica != 1:
            return None
        selector = self.demand.node_selector
        return frozenset(n.name for n in state.nodes if matches(n.labels, selector))

    def _domains(self, workload: Workload, state: ClusterState) -> dict[tuple[str, str], int]:
        """The workload's replicas per failure domain (label, value) already placed."""
        counts: dict[tuple[str, str], int] = {}
        if self.hints.strategy != "spread" or not self.hints.failure_domains:
            return counts
        for replica in workload.placement:
            for name in replica.nodes:
                node = state.node(name)
                if node is None:
                    continue
                for label in self.hints.failure_domains:
                    value = node.labels.get(label)
                    if value is not None:
                        counts[label, value] = counts.get((label, value), 0) + 1
        return counts

    def domain_load(self, unit: Unit) -> int:
        """The workload's replicas in the unit's failure domains, the widest weighing most."""
        if not self.domains:
            return 0
        load = 0
        for name in unit:
            labels = self.caps[name].labels
            for label in self.hints.failure_domains:
                value = labels.get(label)
                load = load * 10_000 + (self.domains.get((label, value), 0) if value else 0)
        return load

    def took(self, unit: Unit) -> None:
        """One more replica in the unit's failure domains (pick_nodes, between picks)."""
        if self.hints.strategy != "spread":
            return
        for name in unit:
            labels = self.caps[name].labels
            for label in self.hints.failure_domains:
                value = labels.get(label)
                if value is not None:
                    self.domains[label, value] = self.domains.get((label, value), 0) + 1

    def _units(self) -> list[Unit]:
        names = sorted(self.caps)
        if self.demand.nodes_per_replica == 1:
            if not self.explain:
                # Nodes outside the pool's selector are rejected without words: skip them.
                names = list(_selected(self.caps, self.demand.node_selector))
            return [(name,) for name in names]
        if self.demand.nodes_per_replica > 2:
            reason = (
                f"nodes_per_replica {self.demand.nodes_per_replica}: only linked pairs are "
                "known as tensor-parallel groups"
            )
            self.rejected.append(Rejection(nodes=tuple(names), reasons=(reason,)))
            return []
        linked: set[str] = set()
        units: list[Unit] = []
        for link in sorted(self.state.links, key=lambda lk: lk.name):
            pair = tuple(sorted(link.nodes))
            if any(name not in self.caps for name in pair):
                continue
            linked.update(pair)
            problems, total, shown = _link_problems(link, self.hints)
            if problems:
                self.rejected.append(Rejection(nodes=pair, reasons=tuple(problems)))
                continue
            known = self.links.get(pair)
            if known is None:
                units.append(pair)
            if known is None or total > known[1]:
                # Two links between one pair: the group uses the faster.
                self.links[pair] = (link, total, shown)
        for name in names:
            if name not in linked:
                reason = "not linked to another node: a tensor-parallel replica needs a pair"
                self.rejected.append(Rejection(nodes=(name,), reasons=(reason,)))
        return units

    def fit(self, unit: Unit) -> list[NodeFit] | list[str]:
        fits: list[NodeFit] = []
        for name in unit:
            cap = self.caps[name]
            result = evaluate(
                cap, self.demand, self.hints, self.overlay, explain=self.explain, memo=self.memo
            )
            if isinstance(result, list):
                return [f"{name}: {reason}" for reason in result] if len(unit) > 1 else result
            fits.append(result)
        return fits

    def key(self, unit: Unit, fits: Sequence[NodeFit]) -> SortKey:
        soft = int(any(f.soft_taints for f in fits))
        preference = max(f.preference for f in fits)
        whole = sum(f.whole_cards for f in fits) if self.demand.accepts_shared else 0
        slots = sum(f.slots_after for f in fits)
        memory = min((f.memory_after or 0) for f in fits)
        here = sum(f.replicas_here for f in fits)
        link = self.links[unit][1] if unit in self.links else 0.0
        if self.hints.strategy == "spread":
            domain = self.domain_load(unit)
            return (soft, preference, whole, domain, here, -slots, -memory, -link, unit)
        return (soft, preference, whole, 0, slots, memory, -here, -link, unit)

    def candidate(self, rank: int, unit: Unit, fits: Sequence[NodeFit]) -> Candidate:
        reasons: list[str] = []
        for f in fits:
            reasons.extend(self._reasons(f))
        link = self.links.get(unit)
        if link is not None:
            reasons.append(link[2])
        memories = [f.memory_after for f in fits]
        return Candidate(
            rank=rank,
            nodes=unit,
            gpus=tuple(card.uuid for f in fits for card in f.cards),
            link=link[0].name if link else None,
            memory_free_after_bytes=None if None in memories else min(m or 0 for m in memories),
            free_slots_after=sum(f.slots_after for f in fits),
            reasons=tuple(reasons),
        )

    def _reasons(self, f: NodeFit) -> list[str]:
        cap: NodeCapacity = self.caps[f.node]
        out: list[str] = []
        for card in f.cards:
            what = f"{f.node}: {card.uuid} ({card.model}, {card.sharing})"
            if card.sharing in ("mps", "time-slicing"):
                limits = []
                if card.client_memory_limit_bytes is not None:
                    limits.append(f"client memory limit {gib(card.client_memory_limit_bytes)}")
                if card.client_compute_percent is not None:
                    limits.append(f"{card.client_compute_percent}% compute")
                extra = f" ({', '.join(limits)})" if limits else ""
                out.append(f"{what}: joins as a shared client{extra}")
            elif card.sharing == "mig":
                size = card.mig_profile or "slice"
                out.append(f"{what}: a free MIG slice {size}")
            else:
                out.append(f"{what}: whole card")
        if not f.cards:
            out.append(f"{f.node}: no card needed")
        if f.memory_after is not None and f.memory_total is not None:
            where = "unified memory" if f.host_checked else "card memory"
            source = (
                cap.memory_source
                if f.host_checked
                else ", ".join(sorted({card.memory_source for card in f.cards}))
            )
            out.append(
                f"{f.node}: {gib(f.memory_after)} of {gib(f.memory_total)} {where} free after "
                f"the fit ({source})"
            )
        out.append(f"{f.node}: {f.slots_after} card slot(s) free after")
        if self.hints.prefer_gpu_models:
            if f.preference < len(self.hints.prefer_gpu_models):
                model = self.hints.prefer_gpu_models[f.preference]
                out.append(f"{f.node}: preferred GPU model {model} (#{f.preference + 1})")
            else:
                out.append(f"{f.node}: no preferred GPU model")
        out.append(
            f"{f.node}: {self.hints.strategy}: {f.replicas_here} replica(s) of "
            f"{self.demand.workload} already here"
        )
        out += [f"{f.node}: PreferNoSchedule taint {t}: ranked lower" for t in f.soft_taints]
        out += [
            f"{f.node}: {a.kind}: the scheduler may refuse pods here until fixed ({a.fix})"
            for a in self.anomalies
            if a.node == f.node and a.kind in ("mps_double_count", "scheduler_overcount")
        ]
        out += [f"{f.node}: {note}" for note in cap.notes]
        return out

    def grouped(self) -> list[tuple[KeyPrefix, list[Unit]]]:
        """Single nodes that rank alike, best-named first, with the key they share.

        On a fleet most nodes are alike: the same cards in the same state, no soft taint, no
        replica of the workload yet. One fit per group stands for all its members (they differ
        only in name, the last tie-break), so ranking costs one evaluation per kind of node.
        """
        groups: dict[tuple[object, ...], list[Unit]] = {}
        workload = self.demand.workload
        for unit in self.units:
            cap = self.caps[unit[0]]
            if admissible(cap, self.demand, self.hints):
                domains = tuple(cap.labels.get(k) for k in self.hints.failure_domains)
                kind = (cap.shape, bool(cap.soft_taints), cap.replicas.get(workload, 0), domains)
                groups.setdefault(kind, []).append(unit)
        out: list[tuple[KeyPrefix, list[Unit]]] = []
        for members in groups.values():
            result = self.fit(members[0])
            fits = [r for r in result if isinstance(r, NodeFit)]
            if fits:
                key = self.key(members[0], fits)
                out.append((key[:-1], members))
        return out

    def initial(self) -> list[tuple[SortKey, Unit, list[NodeFit]]]:
        fitting: list[tuple[SortKey, Unit, list[NodeFit]]] = []
        for unit in self.units:
            result = self.fit(unit)
            if result and isinstance(result[0], NodeFit):
                fits = [r for r in result if isinstance(r, NodeFit)]
                fitting.append((self.key(unit, fits), unit, fits))
            elif self.explain:
                self.rejected.append(Rejection(nodes=unit, reasons=tuple(map(str, result))))
        return fitting

    def placement(self, candidates: list[Candidate]) -> Placement:
        rejected = sorted(self.rejected, key=lambda r: r.nodes)
        return Placement(
            workload=self.demand.workload,
            demand=self.demand,
            candidates=tuple(candidates),
            rejected=tuple(rejected),
            anomalies=tuple(self.anomalies),
        )
