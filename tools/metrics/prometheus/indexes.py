"""The keys a Prometheus series is joined to: the cards and workloads of an observation.

A card by its DCGM `UUID`, else by its node and index; a workload by the pod that exported the
series (its owner found by dropping the pod name's generated suffixes), else by its model when
one workload serves it; an InferencePool or Kueue LocalQueue by its `name`
(tools.metrics.prometheus.join tells the whole join).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import cast

from tools.metrics.prometheus.combining import grouped
from tools.model import ClusterState

NODE_LABELS = ("Hostname", "node", "kubernetes_node")


@dataclass(frozen=True, slots=True)
class Placing:
    """Where the series of a card family's answer go in the card order."""

    taken: list[int]
    """For each card in the card order, the place of its series in the answer; a card no
    series read (a hole) takes the place just after the last series, where a stand-in goes."""
    holes: tuple[int, ...]
    """The cards no series read, by their place in the card order."""
    in_order: bool
    """The answer is in the card order itself, holding every card: nothing to move."""


class CardIndex:
    """Card UUIDs of an observation, and (node, card index) -> UUID for series without one.

    The slots are worked out only when a series lacks a known UUID: a DCGM exporter's series
    all carry one, and a fleet's 8,000 cards need not be walked twice a tick for nothing."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.order: list[str] = []
        """Every card's UUID, node by node and card by card: the order the new observation's
        cards are built in."""
        self.position: dict[str, int] = {}
        """Each UUID's place in `order`: where a card family's column puts its series."""
        self.uuids: AbstractSet[str] = self.position.keys()
        self._canonical: dict[str, str] | None = None
        self._by_slot: dict[tuple[str, str], str] | None = None
        self._by_node: dict[str, list[str]] | None = None
        self.refresh(state)

    def refresh(self, state: ClusterState) -> None:
        """The cards of this tick's observation: what was worked out of the last one's stands
        when they are the same cards in the same order, as they are tick after tick."""
        self.state = state
        self._by_slot = None
        self._by_node = None
        order = [gpu.uuid for node in state.nodes for gpu in node.gpus]
        if order == self.order:
            return
        self.order = order
        self.position = {uuid: i for i, uuid in enumerate(order)}
        self.uuids = self.position.keys()
        self._canonical = None

    def positions(self, named: list[str | None]) -> Placing | None:
        """Where each series goes in `order`, by its card's UUID (the answer's `UUID` column);
        None when one names no card here, or two one card."""
        found = list(map(cast("Callable[[str | None], int | None]", self.position.get), named))
        if None in found:
            return None
        places = cast("list[int]", found)
        count, series = len(self.order), len(places)
        if places == list(range(count)):
            return Placing(places, (), in_order=True)
        taken = [series] * count  # a card no series read takes the stand-in after the last
        for at, place in enumerate(places):
            taken[place] = at
        if taken.count(series) != count - series:
            return None  # two series of one card: combined by keys
        return Placing(taken, _holes(taken, series), in_order=False)

    @property
    def canonical(self) -> dict[str, str]:
        """Each UUID to the observation's own string: keys a series names by an equal string of
        its own answer are swapped for it, so that later lookups by the card's UUID compare
        pointers, not characters. (Made for an answer read by keys; a column needs none.)"""
        if self._canonical is None:
            self._canonical = dict(zip(self.order, self.order, strict=True))
        return self._canonical

    @property
    def by_slot(self) -> dict[tuple[str, str], str]:
        if self._by_slot is None:
            self._by_slot = {
                (node.name, str(gpu.index)): gpu.uuid
                for node in self.state.nodes
                for gpu in node.gpus
            }
        return self._by_slot

    @property
    def by_node(self) -> dict[str, list[str]]:
        """Each node's cards' UUIDs, by the node's name."""
        if self._by_node is None:
            self._by_node = {n.name: [g.uuid for g in n.gpus] for n in self.state.nodes}
        return self._by_node

    def node_cards(self, labels: dict[str, str]) -> list[str] | None:
        """The cards of the node a series names (`Hostname`, `node` or `kubernetes_node`);
        None when it names no node of the observation."""
        for name in NODE_LABELS:
            host = labels.get(name)
            if host is not None and (found := self.by_node.get(host)) is not None:
                return found
        return None

    def key(self, labels: dict[str, str]) -> str | None:
        uuid = labels.get("UUID")
        if uuid is not None and uuid in self.uuids:
            return uuid
        index = labels.get("gpu")
        if index is None:
            return None
        for name in NODE_LABELS:
            host = labels.get(name)
            if host is not None:
                found = self.by_slot.get((host, index))
                if found is not None:
                    return found
        return None


def _holes(taken: list[int], stand_in: int) -> tuple[int, ...]:
    """The places in the card order that take the stand-in, each found by a scan in C."""
    found: list[int] = []
    at = -1
    for _ in range(taken.count(stand_in)):
        at = taken.index(stand_in, at + 1)
        found.append(at)
    return tuple(found)


PODLESS = object()
"""What `_Pods` answers for a series without a pod: matched by its model instead."""


class _Pods(dict[tuple[str, str | None], object]):
    """(namespace, pod) -> the owning workload's name (None: none), worked out on first sight.

    A dict, so that a known pod — every one after the first tick — is found by C code in
    the middle of a comprehension; only a new one calls back into Python."""

    def __init__(self, owner: Callable[[str, str], str | None]) -> None:
        super().__init__()
        self.owner = owner

    def __missing__(self, slot: tuple[str, str | None]) -> object:
        namespace, pod = slot
        if not pod:
            return PODLESS
        found = self[slot] = self.owner(namespace, pod)
        return found


class WorkloadIndex:
    """Pod (and model) -> workload name, remembered across ticks while the workloads stay."""

    def __init__(self) -> None:
        self._names: frozenset[str] = frozenset()
        self._models: dict[str, str] = {}
        self.pods = _Pods(self._owner)
        self.groupings = grouped
        """Where each workload's series lie in an answer (tools.metrics.prometheus.combining)."""

    def refresh(self, state: ClusterState) -> None:
        names = frozenset(w.name for w in state.workloads)
        if names == self._names:
            return
        self._names = names
        self.pods = _Pods(self._owner)
        serving: dict[str, list[str]] = {}
        for w in state.workloads:
            if w.model:
                serving.setdefault(w.model, []).append(w.name)
        self._models = {m: ws[0] for m, ws in serving.items() if len(ws) == 1}

    @property
    def names(self) -> frozenset[str]:
        return self._names

    def owners(self, pods: list[str | None], namespaces: list[str]) -> list[object]:
        """The workload of each series' (namespace, pod), from its pods' and namespaces'
        columns (`PODLESS` where it has no pod)."""
        return list(map(self.pods.__getitem__, zip(namespaces, pods, strict=True)))

    def key(self, labels: dict[str, str]) -> str | None:
        workload = labels.get("workload")
        if workload:  # recorded per workload (the recording rules)
            return self.named(labels.get("namespace", ""), workload)
        pod = labels.get("exported_pod") or labels.get("pod")
        if not pod:
            model = labels.get("model_name")
            return None if model is None else self._models.get(model)
        namespace = labels.get("exported_namespace") or labels.get("namespace") or ""
        return cast("str | None", self.pods[(namespace, pod)])

    def pool_key(self, labels: dict[str, str]) -> str | None:
        """The workload an InferencePool or a Kueue LocalQueue is named for (`name`)."""
        name = labels.get("name")
        if name is None:
            return None
        return self.named(labels.get("namespace", ""), name)

    def named(self, namespace: str, name: str) -> str | None:
        """The workload called `name` in `namespace`: `namespace/name` where the backend names
        workloads so, else `name`."""
        for candidate in (f"{namespace}/{name}", name):
            if candidate in self._names:
                return candidate
        return None

    def _owner(self, namespace: str, pod: str) -> str | None:
        parts = pod.split("-")
        for cut in range(len(parts), max(0, len(parts) - 3), -1):
            owner = "-".join(parts[:cut])
            for candidate in (f"{namespace}/{owner}", owner):
                if candidate in self._names:
                    return candidate
        return None
