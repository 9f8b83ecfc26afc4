"""Series of one card or workload combined into one reading, by the family's aggregate.

The waiting requests of a workload's replicas add up (`sum`); of their KV caches the fullest and
of their p90s the slowest count (`max`). A series answering NaN (a quantile over a window without
requests) says nothing: a key with nothing but such series has no data. A key is dated by its
oldest series, so that one replica whose exporter stopped answering makes the whole reading as
old as that replica's last sample.

`combined` takes an answer's columns, as the join reads them label by label
(tools.metrics.prometheus.join); `combine` adds one series at a time, for an answer read series
by series.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from typing import NamedTuple, cast


class Combined(NamedTuple):
    """Per key: the combined value, the age of its oldest series, and the keys of no data."""

    values: dict[str, float]
    ages: dict[str, float]
    no_data: set[str]


class Groups(NamedTuple):
    """An answer's series grouped by key (in C, by a stable sort of their places by key)."""

    keys: list[str]
    """Each key once, in order."""
    places: list[int]
    """The places of the series in the answer, key after key; a key's in the answer's order."""
    spans: list[slice]
    """Beside `keys`: where each key's places lie in `places`."""


def grouped(keys: Sequence[str | None]) -> Groups:
    """The series' places grouped by key (None: matched nothing, left out)."""
    places: Iterable[int] = range(len(keys))
    if None in keys:
        places = [i for i, key in enumerate(keys) if key is not None]
    key_of = cast("Callable[[int], str]", keys.__getitem__)
    ordered = sorted(places, key=key_of)
    names: list[str] = []
    spans: list[slice] = []
    start = 0
    for key, group in groupby(ordered, key_of):
        end = start + sum(1 for _ in group)
        names.append(key)
        spans.append(slice(start, end))
        start = end
    return Groups(names, ordered, spans)


def combined(
    keys: Sequence[str | None],
    raws: Sequence[float],
    stamps: Sequence[float | None],
    age_of: dict[float | None, float],
    *,
    scale: float,
    summed: bool,
    groups: Groups | None = None,
) -> Combined:
    """The series — each a key (None: matched nothing, left out), a raw value and a sample
    time (None: undated) — combined per key. `age_of` gives each sample time's age (None's
    too); each value is multiplied by `scale` before combining. `groups`: `grouped(keys)`,
    when known.

    A fleet's answer has thousands of series but only as many keys as workloads: its values
    and times are laid out key after key, and each key's span of them added up (or its
    largest taken) and its oldest time found, all in C. A NaN among the values, or series
    undated beside dated ones, have the keys combined one by one."""
    groups = grouped(keys) if groups is None else groups
    found = list(map(raws.__getitem__, groups.places))
    total = sum(found)
    if total == total:  # noqa: PLR0124 - no NaN (nor +Inf and -Inf) among them
        dated = cast("list[float]", list(map(stamps.__getitem__, groups.places)))
        try:
            oldest = list(map(min, map(dated.__getitem__, groups.spans)))
        except TypeError:  # None beside numbers: some series undated
            return _one_by_one(groups, raws, stamps, age_of, scale=scale, summed=summed)
        if scale != 1:
            found = list(map(scale.__mul__, found))
        spans = map(found.__getitem__, groups.spans)
        values = list(map(sum, spans)) if summed else list(map(max, spans))
        return Combined(
            dict(zip(groups.keys, values, strict=True)),
            dict(zip(groups.keys, map(age_of.__getitem__, oldest), strict=True)),
            set(),
        )
    return _one_by_one(groups, raws, stamps, age_of, scale=scale, summed=summed)


def _one_by_one(
    groups: Groups,
    raws: Sequence[float],
    stamps: Sequence[float | None],
    age_of: dict[float | None, float],
    *,
    scale: float,
    summed: bool,
) -> Combined:
    """`combined`, key by key: a series answering NaN says nothing, a key of only such series
    has no data; a key is dated by its oldest dated series."""
    raw_of, stamp_of = raws.__getitem__, stamps.__getitem__
    values: dict[str, float] = {}
    ages: dict[str, float] = {}
    no_data: set[str] = set()
    for key, span in zip(groups.keys, groups.spans, strict=True):
        where = [i for i in groups.places[span] if raws[i] == raws[i]]
        if not where:
            no_data.add(key)
            continue
        found = list(map(raw_of, where))
        if scale != 1:
            found = list(map(scale.__mul__, found))
        # In the answer's order, as one series at a time would add them.
        values[key] = sum(found) if summed else max(found)
        dated = cast("Iterable[float]", filter(_dated, map(stamp_of, where)))
        ages[key] = age_of[min(dated, default=None)]
    return Combined(values, ages, no_data)


def _dated(stamp: float | None) -> bool:
    return stamp is not None


def combine(values: dict[str, float], key: str, value: float, summed: bool) -> None:
    """Another series of `key`, one at a time: added (the replicas' waiting requests), or the
    larger kept."""
    old = values.get(key)
    if old is None:
        values[key] = value
    elif summed:
        values[key] = old + value
    elif value > old:
        values[key] = value
