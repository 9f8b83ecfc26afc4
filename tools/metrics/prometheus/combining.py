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


Groups = list[tuple[str, list[int]]]
"""Each key with the places of its series in an answer, in the answer's order."""


def grouped(keys: Sequence[str | None]) -> Groups:
    """The series' places grouped by key (None: matched nothing, left out), in C: a stable sort
    of the places by key."""
    places: Iterable[int] = range(len(keys))
    if None in keys:
        places = [i for i, key in enumerate(keys) if key is not None]
    key_of = cast("Callable[[int], str]", keys.__getitem__)
    return [(key, list(group)) for key, group in groupby(sorted(places, key=key_of), key_of)]


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

    Combined group by group: a fleet's answer has thousands of series but only as many keys
    as workloads."""
    raw_of, stamp_of = raws.__getitem__, stamps.__getitem__
    values: dict[str, float] = {}
    ages: dict[str, float] = {}
    no_data: set[str] = set()
    for key, places in grouped(keys) if groups is None else groups:
        where = places  # narrowed below to the series that are numbers
        found = list(map(raw_of, where))
        value = sum(found) if summed else max(found)
        if value != value:  # noqa: PLR0124 - a NaN among them (or +Inf and -Inf added)
            where = [i for i in where if raws[i] == raws[i]]
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
