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
evaluation time (the tick's latest, `SampleTimes.evaluated`: one for every family) minus its
sample's timestamp, both on Prometheus's clock, and is carried over to
the observation's clock (`observed_at = state.observed_at - age`), so neither a clock skew
between hosts nor a simulated clock makes a reading look older or newer than it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import cast

from tools.metrics.prometheus.columns import card_column
from tools.metrics.prometheus.combining import combine, combined
from tools.metrics.prometheus.indexes import PODLESS, CardIndex, WorkloadIndex
from tools.metrics.prometheus.queries import PART, STAMP, UNIFIED_LABEL, Resolved
from tools.metrics.prometheus.readings import Readings
from tools.metrics.prometheus.vector import Vector, number

Slot = Callable[[dict[str, str]], object]
"""The values of a timestamp series' labels in a series: what both must share to be dated."""


def _slot(names: tuple[str, ...]) -> Slot:
    if not names:
        return lambda _labels: ()
    return itemgetter(*names)  # KeyError when a series lacks one: it is not dated by these


def collect(
    family: Resolved,
    answer: Vector,
    cards: CardIndex,
    workloads: WorkloadIndex,
    times: SampleTimes | None = None,
) -> Readings:
    """One family's series, combined per card or workload (the timed part of a tick's join).

    The default queries' series each carry their own sample time (`steward_t`, joined on by
    Prometheus). An override's are dated by timestamp series (`steward_part="t"`), each dating
    the value series that carry the same values of its labels: one per scrape target for a
    gauge, one per pod for a rate or a quantile, one per series for a `timestamp(query)`. A
    key's age is its oldest series'.

    Tens of thousands of series a tick: the answer Prometheus gives for the default queries is
    read with whole-list operations (`_at_once`) — a card family's of one series per card down
    the card order (tools.metrics.prometheus.columns); any other is read series by series."""
    times = SampleTimes() if times is None else times
    found = _at_once(family, answer, cards, workloads, times)
    return found if found is not None else _each(family, answer, cards, workloads, times)


def _read(
    family: Resolved,
    *,
    answer: Vector,
    dated: Callable[[Vector], list[float | None] | None],
    part: str | None,
    parted: bool,
    cards: CardIndex,
    workloads: WorkloadIndex,
) -> tuple[list[float | None], list[object], list[str | None]] | None:
    """The value series' columns, each a label read down all of them at once (`Vector.column`),
    not series by series: their parts, what dates them (`dated`: the oldest sample of the
    timestamp series that share their dating labels, or their own `steward_t`), what names
    their card or workload, and whether they are marked as taken from host memory. None when a
    series lacks a dating label, or its `steward_part` is not `part` (None: it has none).

    The default queries keep only the labels the join reads (`by (…)`), so no series of theirs
    can carry a part: theirs are not read (`parted` False)."""
    dates = dated(answer)
    if dates is None:
        return None
    count = len(answer)
    if parted and answer.column(PART).count(part) != count:
        return None  # a timestamp series after a value series, or a series of neither part
    marks: list[str | None] = (
        answer.column(UNIFIED_LABEL)
        if family.family.marked and answer.carries(UNIFIED_LABEL)
        else [None] * count
    )
    target = family.family.target
    found: list[object]
    if target == "gpu":
        canonical = cast("Callable[[str | None], str | None]", cards.canonical.get)
        found = list(map(canonical, answer.column("UUID")))
    elif target == "workload" and answer.carries("workload"):  # recorded per workload
        found = list(map(workloads.key, answer.labels))
    elif target == "workload":
        pods = workloads.pods
        # The default queries moved a pod Prometheus renamed into `pod`/`namespace`.
        renamed = not family.default and (
            answer.carries("exported_pod") or answer.carries("exported_namespace")
        )
        if not renamed:
            namespaces = cast("list[str]", answer.column("namespace"))
            if None in namespaces:
                namespaces = [n or "" for n in namespaces]
            found = workloads.owners(answer.column("pod"), namespaces)
        else:
            found = [
                pods[
                    (
                        lb.get("exported_namespace") or lb.get("namespace") or "",
                        lb.get("exported_pod") or lb.get("pod"),
                    )
                ]
                for lb in answer.labels
            ]
    else:
        found = list(map(workloads.pool_key, answer.labels))
    return dates, found, marks


def _at_once(
    family: Resolved,
    answer: Vector,
    cards: CardIndex,
    workloads: WorkloadIndex,
    times: SampleTimes,
) -> Readings | None:
    """The answer as the queries give it — every series dated by its own `steward_t` (the
    defaults), or timestamp series first, all with the same label names, every value series
    carrying them (overrides) — read with list operations that run in C. None when it is not so
    shaped: `_each` then reads it series by series.

    A fleet's answer is tens of thousands of series: each label the join needs is read down
    all of them at once (`Vector.column`, scanned from Prometheus's text as it was decoded), and
    what follows works on those columns."""
    if not len(answer):
        return None
    evaluated = times.clock(answer)
    by: dict[object, float] = {}
    """The oldest sample per dating slot (the timestamp series' labels but the part)."""
    stamped = 0
    part: str | None = "v"
    """What every value series' `steward_part` must say."""
    parted = True
    """Whether the answer's series may carry a part at all (their parts are checked)."""
    first = answer.first
    dated: Callable[[Vector], list[float | None] | None] = _undated
    if first.get(PART) == "t":
        series = answer.series
        stamped = _stamped(series)
        size = len(first)
        slot = _slot(tuple(sorted(n for n in first if n != PART)))
        try:
            dating = [(lb.get(PART), len(lb), slot(lb), raw) for lb, raw in series[:stamped]]
        except KeyError:
            return None  # timestamp series of several kinds
        # Each with all of the first one's names and as many: the same names.
        if [1 for kind, count, _, _ in dating if kind != "t" or count != size]:
            return None  # timestamp series of several kinds, or out of order
        # Series of one answer have distinct label sets, so their slots are distinct too: one
        # sample per slot, taken in C. Should two share one anyway, the oldest is kept.
        by.update(zip([d[2] for d in dating], [d[3] for d in dating], strict=True))
        if len(by) != len(dating):
            by.clear()
            for _, _, at, raw in dating:
                old = by.get(at)
                by[at] = raw if old is None or raw < old else old

        def dated(values: Vector) -> list[float | None] | None:
            try:
                return list(map(by.get, map(slot, values.labels)))
            except KeyError:  # a value series without the labels that date it
                return None

    elif STAMP in first:  # the default queries': each series carries its sample time
        # An override so shaped has each series' part checked: none may have one.
        dated, part, parted = times, None, not family.default
    rest = answer.after(stamped)
    if dated is times and not parted and family.family.target == "gpu":
        column = card_column(
            rest,
            cards,
            evaluated=evaluated,
            scale=family.family.scale,
            marked=family.family.marked,
        )
        if column is not None:  # DCGM's common answer: read in the card order
            return column
    read = _read(
        family,
        answer=rest,
        dated=dated,
        part=part,
        parted=parted,
        cards=cards,
        workloads=workloads,
    )
    if read is None:
        return None
    stamps, found, marks = read
    raws = rest.values
    keys = _keys(family, found=found, answer=rest, cards=cards, workloads=workloads)
    age_of = Ages(evaluated)
    out = Readings()
    if None in keys:
        out.unmatched = keys.count(None)
    if marks.count(None) != len(marks):
        out.marked = {
            k for k, mark in zip(keys, marks, strict=True) if k is not None and mark is not None
        }
    scale, summed = family.family.scale, family.family.aggregate == "sum"
    total = sum(raws)
    if not out.unmatched and total == total:  # noqa: PLR0124 - no NaN among them
        # One series per card, the common case of DCGM: no combining to do. (Several of one
        # card show as fewer keys than series: they are combined below.)
        named = cast("tuple[str, ...]", keys)  # no None among them: none is unmatched
        values = dict(zip(named, raws if scale == 1 else map(scale.__mul__, raws), strict=True))
        if len(values) == len(named):
            out.values = values
            distinct = set(stamps)
            if len(distinct) == 1:  # one sample time (one scrape target), or none: one age
                out.ages = dict.fromkeys(named, age_of[distinct.pop()])
            else:
                out.ages = dict(zip(named, map(age_of.__getitem__, stamps), strict=True))
            return out
    out.values, out.ages, out.no_data = combined(
        keys, raws, stamps, age_of, scale=scale, summed=summed, groups=workloads.groupings(keys)
    )
    return out


class Ages(dict[float | None, float]):
    """Sample times' ages at the evaluation, each worked out on first asking: of a workload
    dated by its oldest pod, only that pod's is asked for (a fleet's pods are scraped at
    thousands of moments, its workloads number hundreds). None, undated, is of age 0."""

    def __init__(self, evaluated: float) -> None:
        super().__init__()
        self.evaluated = evaluated

    def __missing__(self, at: float | None) -> float:
        found = self[at] = 0.0 if at is None else max(0.0, self.evaluated - at)
        return found


class SampleTimes(dict[str, float | None]):
    """Each series' own sample time (`steward_t`) as a number (None where it is not one):
    what dates the default queries' series. Of one tick: the series of every family scraped
    from one pod carry the same text, made a number on first sight.

    `evaluated`: the tick's clock, the Prometheus time every family's ages are measured from
    (None: each answer's own evaluation)."""

    def __init__(self, evaluated: float | None = None) -> None:
        super().__init__()
        self.evaluated = evaluated

    def clock(self, answer: Vector) -> float:
        """The Prometheus time `answer`'s ages are measured from."""
        return answer.evaluated_at if self.evaluated is None else self.evaluated

    def __call__(self, answer: Vector) -> list[float | None] | None:
        """None when a series lacks its time (the answer is read series by series)."""
        texts = answer.whole(STAMP)
        return None if texts is None else list(map(self.__getitem__, texts))

    def __missing__(self, text: str) -> float | None:
        found = self[text] = number(text)
        return found


def _undated(answer: Vector) -> list[float | None]:
    """Dated by nothing: no series has a sample time."""
    return [None] * len(answer)


def _stamped(series: list[tuple[dict[str, str], float]]) -> int:
    """How many timestamp series lead the answer, if they all come first (as Prometheus answers
    an `or`): found by bisection, in a few reads of thousands of label sets. `_at_once` checks
    every series' part, so an answer in another order is found out and read by `_each`."""
    low, high = 0, len(series)
    while low < high:
        middle = (low + high) // 2
        if series[middle][0].get(PART) == "t":
            low = middle + 1
        else:
            high = middle
    return low


def _keys(
    family: Resolved,
    *,
    found: Sequence[object],
    answer: Vector,
    cards: CardIndex,
    workloads: WorkloadIndex,
) -> Sequence[str | None]:
    """The keys `_read` found, with those it could not settle from the labels it read: a card
    without a known UUID, by its node and index; a workload's series without a pod, by its
    model. Their labels are read again, only theirs."""
    target = family.family.target
    if target == "gpu" and None in found:
        return [
            cast("str | None", k) if k is not None else cards.key(lb)
            for k, lb in zip(found, answer.labels, strict=True)
        ]
    if target == "workload" and PODLESS in found:
        return [
            cast("str | None", k) if k is not PODLESS else workloads.key(lb)
            for k, lb in zip(found, answer.labels, strict=True)
        ]
    return cast("Sequence[str | None]", found)


def _each(
    family: Resolved,
    answer: Vector,
    cards: CardIndex,
    workloads: WorkloadIndex,
    times: SampleTimes | None = None,
) -> Readings:
    """`collect` for an answer of any shape, series by series; ages measured from the tick's
    clock (`times`; none: the answer's own evaluation)."""
    target = family.family.target
    if target == "gpu":
        keyer = cards.key
    elif target == "workload":
        keyer = workloads.key
    else:
        keyer = workloads.pool_key
    uuids = cards.uuids if target == "gpu" else frozenset()
    summed = family.family.aggregate == "sum"
    marked = family.family.marked
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
                again = Vector(answer.evaluated_at, ordered)
                return _each(family, again, cards, workloads, times)
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
        if marked and UNIFIED_LABEL in labels:
            out.marked.add(key)
        read_values = True
        own = labels.get(STAMP)  # the default queries': its sample time in a label
        if own is not None and (stamp := number(own)) is not None:
            old = oldest.get(key)
            if old is None or stamp < old:
                oldest[key] = stamp
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
        combine(values, key, raw * scale, summed)
    evaluated = answer.evaluated_at if times is None else times.clock(answer)
    out.ages = {
        key: 0.0 if (stamp := oldest.get(key)) is None else max(0.0, evaluated - stamp)
        for key in values
    }
    out.no_data -= values.keys()
    return out
