"""The join: Prometheus series matched to the cards and workloads of a `ClusterState`.

Cards are matched by the DCGM exporter's `UUID` label (unique across a fleet), else by the node
(`Hostname`, `node` or `kubernetes_node`) and the card's index (`gpu`). Workloads are matched by
the pod that exported the series — `exported_pod`/`exported_namespace` when Prometheus renamed
the exporter's own labels, else `pod`/`namespace` — whose owner is found by dropping the pod
name's generated suffixes (`name-7d9f8c6b5-x2x9z` of a Deployment, `name-0` of a StatefulSet);
a series without a pod is matched by `model_name` when exactly one workload serves that model.
The endpoint picker's series name their InferencePool in `name`, Kueue's its LocalQueue.
docs/metrics.md shows it all.

Series of one card or workload combine by the family's aggregate (waiting requests of all
replicas add up; the fullest KV cache and the slowest p90 count). A reading's age is the
evaluation time minus its sample's timestamp, both on Prometheus's clock, and is carried over to
the observation's clock (`observed_at = state.observed_at - age`), so neither a clock skew
between hosts nor a simulated clock makes a reading look older or newer than it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import cast

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
    """Card UUIDs of an observation, and (node, card index) -> UUID for series without one.

    The slots are worked out only when a series lacks a known UUID: a DCGM exporter's series
    all carry one, and a fleet's 8,000 cards need not be walked twice a tick for nothing."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.uuids: set[str] = {gpu.uuid for node in state.nodes for gpu in node.gpus}
        self._by_slot: dict[tuple[str, str], str] | None = None

    @property
    def by_slot(self) -> dict[tuple[str, str], str]:
        if self._by_slot is None:
            self._by_slot = {
                (node.name, str(gpu.index)): gpu.uuid
                for node in self.state.nodes
                for gpu in node.gpus
            }
        return self._by_slot

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
        """The workload an InferencePool or a Kueue LocalQueue is named for (`name`)."""
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


Slot = Callable[[dict[str, str]], object]
"""The values of a timestamp series' labels in a series: what both must share to be dated."""


def _slot(names: tuple[str, ...]) -> Slot:
    if not names:
        return lambda _labels: ()
    return itemgetter(*names)  # KeyError when a series lacks one: it is not dated by these


def collect(
    family: Resolved, answer: Vector, cards: CardIndex, workloads: WorkloadIndex
) -> Readings:
    """One family's series, combined per card or workload (the timed part of a tick's join).

    Timestamp series (`steward_part="t"`) date the value series that carry the same values of
    their labels: one per scrape target for a gauge, one per pod for a rate or a quantile, one
    per series for a `timestamp(query)` of an override. A key's age is its oldest series'.

    Tens of thousands of series a tick: the answer Prometheus gives for the default queries is
    read with whole-list operations (`_at_once`); any other is read series by series."""
    found = _at_once(family, answer, cards, workloads)
    return found if found is not None else _each(family, answer, cards, workloads)


def _keys(
    family: Resolved, labels: list[dict[str, str]], cards: CardIndex, w: WorkloadIndex
) -> list[str | None]:
    target = family.family.target
    if target == "gpu":
        keys: list[str | None] = [lb.get("UUID") for lb in labels]
        if not cards.uuids.issuperset(keys):  # a series without a known UUID: by its slot
            keys = [
                k if k in cards.uuids else cards.key(lb) for k, lb in zip(keys, labels, strict=True)
            ]
        return keys
    return list(map(w.key if target == "workload" else w.pool_key, labels))


def _at_once(
    family: Resolved, answer: Vector, cards: CardIndex, workloads: WorkloadIndex
) -> Readings | None:
    """The answer as the default queries give it — timestamp series first, all with the same
    label names, every value series carrying them — read with list operations that run in C.
    None when it is not so shaped: `_each` then reads it series by series."""
    if not answer.series:
        return None
    # Comprehensions, not map(methodcaller) or zip(*…): measured twice as fast on CPython 3.11.
    series = answer.series
    every = [labels for labels, _ in series]
    raws = [raw for _, raw in series]
    parts = [labels.get(PART) for labels in every]
    stamped = parts.count("t")
    if parts.count("v") + stamped != len(parts) or "v" in parts[:stamped]:
        return None
    labels_v, raws_v = every[stamped:], raws[stamped:]
    if not stamped:
        stamps: list[float | None] = [None] * len(labels_v)
    else:
        first = every[0].keys()
        if [1 for labels in every[1:stamped] if labels.keys() != first]:
            return None  # timestamp series of several kinds
        slot = _slot(tuple(sorted(n for n in first if n != PART)))
        by: dict[object, float] = {}
        for at, raw in zip(map(slot, every[:stamped]), raws[:stamped], strict=True):
            old = by.get(at)
            by[at] = raw if old is None or raw < old else old
        try:
            stamps = list(map(by.get, map(slot, labels_v)))
        except KeyError:  # a value series without the labels that date it
            return None
    out = Readings()
    values: dict[str, float]
    oldest: dict[str, float | None]
    keys = _keys(family, labels_v, cards, workloads)
    if None in keys:
        out.unmatched = keys.count(None)
    if [1 for labels in labels_v if UNIFIED_LABEL in labels]:
        out.marked = {
            k for k, lb in zip(keys, labels_v, strict=True) if k is not None and UNIFIED_LABEL in lb
        }
    scale, summed = family.family.scale, family.family.aggregate == "sum"
    if not out.unmatched and len(set(keys)) == len(keys) and not any(map(math.isnan, raws_v)):
        # One series per card: the common case of DCGM, no combining to do.
        named = cast("list[str]", keys)  # no None among them: none is unmatched
        scaled = raws_v if scale == 1 else map(scale.__mul__, raws_v)
        values = dict(zip(named, scaled, strict=True))
        oldest = dict(zip(named, stamps, strict=True))
    else:
        values, oldest = {}, {}
        for key, raw, stamp in zip(keys, raws_v, stamps, strict=True):
            if key is None:
                continue
            if raw != raw:  # noqa: PLR0124 - NaN (a quantile without requests)
                out.no_data.add(key)
                continue
            _combine(values, key, raw * scale, summed)
            if stamp is not None:
                old = oldest.get(key)
                if old is None or stamp < old:
                    oldest[key] = stamp
    out.values = values
    # An age per sample time, not per key: the series of one scrape target share theirs.
    evaluated = answer.evaluated_at
    age_of: dict[float | None, float] = {
        t: max(0.0, evaluated - t) for t in set(oldest.values()) if t is not None
    }
    age_of[None] = 0.0
    if oldest.keys() == values.keys():
        out.ages = dict(zip(oldest, map(age_of.__getitem__, oldest.values()), strict=True))
    else:
        stamp_of = oldest.get
        out.ages = {key: age_of[stamp_of(key)] for key in values}
    out.no_data -= values.keys()
    return out


def _each(family: Resolved, answer: Vector, cards: CardIndex, workloads: WorkloadIndex) -> Readings:
    """`collect` for an answer of any shape, series by series."""
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
    groups: dict[tuple[str, ...], tuple[Slot, dict[object, float]]] = {}
    """Timestamp series by the names of their labels: how to slot a series, stamp per slot."""
    oldest: dict[str, float] = {}
    read_values = False
    for labels, raw in answer.series:
        if labels.get(PART) == "t":
            if read_values:
                # Prometheus answers an `or`'s left side first, so timestamps come first; if not,
                # the answer is read again in that order (what dates a series must come first).
                ordered = sorted(answer.series, key=lambda s: s[0].get(PART) != "t")
                return _each(family, Vector(answer.evaluated_at, ordered), cards, workloads)
            names = tuple(sorted(n for n in labels if n != PART))
            group = groups.get(names)
            if group is None:
                group = groups[names] = (_slot(names), {})
            by = group[1]
            slot = group[0](labels)
            old = by.get(slot)
            by[slot] = raw if old is None or raw < old else old
            continue
        # The common case first: a DCGM series whose UUID is a card of the observation.
        key = labels.get("UUID")
        if key is None or key not in uuids:
            key = keyer(labels)
            if key is None:
                out.unmatched += 1
                continue
        if raw != raw:  # noqa: PLR0124 - NaN (a quantile without requests), cheaper than isnan
            out.no_data.add(key)
            continue
        if UNIFIED_LABEL in labels:
            out.marked.add(key)
        read_values = True
        # The oldest sample among the timestamp series that carry this series' labels.
        for slot, by in groups.values():
            try:
                stamp = by.get(slot(labels))
            except KeyError:
                continue  # it lacks one of these labels: not dated by them
            if stamp is not None:
                old = oldest.get(key)
                if old is None or stamp < old:
                    oldest[key] = stamp
        _combine(values, key, raw * scale, summed)
    evaluated = answer.evaluated_at
    out.ages = {
        key: 0.0 if (stamp := oldest.get(key)) is None else max(0.0, evaluated - stamp)
        for key in values
    }
    out.no_data -= values.keys()
    return out


def _combine(values: dict[str, float], key: str, value: float, summed: bool) -> None:
    """Another series of `key`: added (the replicas' waiting requests), or the larger kept."""
    old = values.get(key)
    if old is None:
        values[key] = value
    elif summed:
        values[key] = old + value
    elif value > old:
        values[key] = value
