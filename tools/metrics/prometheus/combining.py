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

from collections.abc import Sequence
from typing import NamedTuple


class Combined(NamedTuple):
    """Per key: the combined value, the age of its oldest series, and the keys of no data."""

    values: dict[str, float]
    ages: dict[str, float]
    no_data: set[str]


def combined(
    keys: Sequence[str | None],
    raws: Sequence[float],
    stamps: Sequence[float | None],
    age_of: dict[float | None, float],
    *,
    scale: float,
    summed: bool,
) -> Combined:
    """The series — each a key (None: matched nothing, left out), a raw value and a sample
    time (None: undated) — combined per key. `age_of` gives each sample time's age (None's
    too); each value is multiplied by `scale` before combining."""
    values: dict[str, float] = {}
    oldest: dict[str, float] = {}
    no_data: set[str] = set()
    oldest_of = oldest.get
    for key, raw, stamp in zip(keys, raws, stamps, strict=True):
        if key is None:
            continue
        if raw != raw:  # noqa: PLR0124 - NaN (a quantile without requests), cheaper than isnan
            no_data.add(key)
            continue
        combine(values, key, raw * scale, summed)
        if stamp is not None:
            before = oldest_of(key)
            if before is None or stamp < before:
                oldest[key] = stamp
    ages = {key: age_of[oldest_of(key)] for key in values}
    return Combined(values, ages, no_data - values.keys())


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
