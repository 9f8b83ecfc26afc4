"""The join: Prometheus series matched to the cards and workloads of a `ClusterState`.

Cards are matched by the DCGM exporter's `UUID` label (unique across a fleet), else by the node
(`Hostname`, `node` or `kubernetes_node`) and the card's index (`gpu`). Workloads are matched by
the pod that exported the series — `exported_pod`/`exported_namespace` when Prometheus renamed
the exporter's own labels, else `pod`/`namespace` — whose owner is found by dropping the pod
name's generated suffixes (`name-7d9f8c6b5-x2x9z` of a Deployment, `name-0` of a StatefulSet);
a series without a pod is matched by `model_name` when exactly one workload serves that model.
The endpoint picker's series name their InferencePool in `name`. docs/metrics.md shows it all.

Series of one card or workload combine by the family's aggregate (waiting requests of all
replicas add up; the fullest KV cache and the slowest p90 count). A reading's age is the
evaluation time minus its sample's timestamp, both on Prometheus's clock, and is carried over to
the observation's clock (`observed_at = state.observed_at - age`), so neither a clock skew
between hosts nor a simulated clock makes a reading look older or newer than it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tools.metrics.prometheus.client import Vector
from tools.metrics.prometheus.queries import PART, Resolved
from tools.model import ClusterState

NODE_LABELS = ("Hostname", "node", "kubernetes_node")
UNIFIED_LABEL = "memory_source"
"""Set by `steward gpus --serve` on memory series taken from the host (GB10 unified memory)."""


@dataclass
class Readings:
    """What one family's answer says, per card UUID or workload name."""

    values: dict[str, float] = field(default_factory=dict)
    ages: dict[str, float] = field(default_factory=dict)
    """Seconds between the newest sample of the key's oldest series and the evaluation."""
    no_data: set[str] = field(default_factory=set)
    """Keys whose series answered NaN (a quantile over a window without requests)."""
    marked: set[str] = field(default_factory=set)
    """Keys with a series marked as taken from host memory."""
    unmatched: int = 0
    """Series that matched no card or workload of the observation."""


class CardIndex:
    """Card UUIDs of an observation, and (node, card index) -> UUID for series without one."""

    def __init__(self, state: ClusterState) -> None:
        self.uuids: set[str] = set()
        self.by_slot: dict[tuple[str, str], str] = {}
        for node in state.nodes:
            for gpu in node.gpus:
                self.uuids.add(gpu.uuid)
                self.by_slot[(node.name, str(gpu.index))] = gpu.uuid

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


class WorkloadIndex:
    """Pod (and model) -> workload name, remembered across ticks while the workloads stay."""

    def __init__(self) -> None:
        self._names: frozenset[str] = frozenset()
        self._models: dict[str, str] = {}
        self._pods: dict[tuple[str, str], str | None] = {}

    def refresh(self, state: ClusterState) -> None:
        names = frozenset(w.name for w in state.workloads)
        if names == self._names:
            return
        self._names = names
        self._pods = {}
        serving: dict[str, list[str]] = {}
        for w in state.workloads:
            if w.model:
                serving.setdefault(w.model, []).append(w.name)
        self._models = {m: ws[0] for m, ws in serving.items() if len(ws) == 1}

    @property
    def names(self) -> frozenset[str]:
        return self._names

    def key(self, labels: dict[str, str]) -> str | None:
        pod = labels.get("exported_pod") or labels.get("pod")
        if not pod:
            model = labels.get("model_name")
            return None if model is None else self._models.get(model)
        namespace = labels.get("exported_namespace") or labels.get("namespace") or ""
        slot = (namespace, pod)
        if slot not in self._pods:
            self._pods[slot] = self._owner(namespace, pod)
        return self._pods[slot]

    def pool_key(self, labels: dict[str, str]) -> str | None:
        name = labels.get("name")
        if name is None:
            return None
        namespace = labels.get("namespace", "")
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


def collect(
    family: Resolved, answer: Vector, cards: CardIndex, workloads: WorkloadIndex
) -> Readings:
    """One family's series, combined per card or workload (the timed part of a tick's join).

    Timestamp series (`steward_part="t"`) date the value series that carry the same values of
    their labels: one per scrape target for a gauge, one per pod for a rate or a quantile, one
    per series for a `timestamp(query)` of an override. A key's age is its oldest series'."""
    target = family.family.target
    if target == "gpu":
        keyer = cards.key
    elif target == "workload":
        keyer = workloads.key
    else:
        keyer = workloads.pool_key
    uuids = cards.uuids if target == "gpu" else frozenset()
    summed = family.family.aggregate == "sum"
    out = Readings()
    values = out.values
    scale = family.family.scale
    stamped: dict[tuple[str, ...], dict[tuple[str | None, ...], float]] = {}
    stamps: dict[str, float] = {}
    dated: list[tuple[str, dict[str, str]]] = []
    """Value series read before any timestamp series: dated once all are in."""
    for labels, raw in answer.series:
        if labels.get(PART) == "t":
            names = tuple(sorted(n for n in labels if n != PART))
            by = stamped.setdefault(names, {})
            slot = tuple(labels[n] for n in names)
            old = by.get(slot)
            by[slot] = raw if old is None or raw < old else old
            continue
        # The common case first: a DCGM series whose UUID is a card of the observation.
        key = labels.get("UUID")
        if key not in uuids:
            key = keyer(labels)
        if key is None:
            out.unmatched += 1
            continue
        if math.isnan(raw):
            out.no_data.add(key)
            continue
        if UNIFIED_LABEL in labels:
            out.marked.add(key)
        if stamped:
            _date(stamps, stamped, key, labels)
        else:
            dated.append((key, labels))
        value = raw * scale
        old_value = values.get(key)
        if old_value is None:
            values[key] = value
        elif summed:
            values[key] = old_value + value
        elif value > old_value:
            values[key] = value
    for key, labels in dated:
        _date(stamps, stamped, key, labels)
    evaluated = answer.evaluated_at
    ages = out.ages
    for key in values:
        stamp = stamps.get(key)
        ages[key] = 0.0 if stamp is None else max(0.0, evaluated - stamp)
    out.no_data -= values.keys()
    return out


def _date(
    stamps: dict[str, float],
    stamped: dict[tuple[str, ...], dict[tuple[str | None, ...], float]],
    key: str,
    labels: dict[str, str],
) -> None:
    """Date `key` by the timestamp series that carry this value series' labels (the oldest)."""
    for names, by in stamped.items():
        stamp = by.get(tuple(map(labels.get, names)))
        if stamp is not None:
            old = stamps.get(key)
            stamps[key] = stamp if old is None or stamp < old else old
