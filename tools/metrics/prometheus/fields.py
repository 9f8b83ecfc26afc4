"""`FieldReadings`: one model field's readings of one tick, as the `Metric`s the join hands out.

A family's answer (tools.metrics.prometheus.join.Readings: a value and an age per card UUID or
workload name) becomes one `Metric` per key — fresh, or stale by its age — made in one pass
over the keys, so that building the observation is a dictionary lookup per card and field.
Readings that say the same thing share one `Metric` (they are immutable): a scrape target's
series share their sample time, so every card of a node at 100 % utilization, or every card of
one model with the same total memory, is the same object — a fleet's tick makes thousands of
readings, not tens of thousands. A field whose family failed this tick answers from the last one
that did not, stale; a key with nothing at all answers the field's default (why there is none).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from tools.metrics.prometheus.join import Readings
from tools.model import Metric, trusted

_METRIC_FIELDS = set(Metric.model_fields)
_new = object.__new__
_set = object.__setattr__


def metric(value: float | None, status: str, at: datetime | None, source: str) -> Metric:
    return trusted(Metric, {"value": value, "status": status, "observed_at": at, "source": source})


def fresh(value: float, at: datetime, source: str) -> Metric:
    """`metric(value, "fresh", at, source)` inlined: the hot path of a tick's join."""
    obj = _new(Metric)
    _set(obj, "__dict__", {"value": value, "status": "fresh", "observed_at": at, "source": source})
    _set(obj, "__pydantic_fields_set__", _METRIC_FIELDS)
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


class Shared:
    """Fresh readings of one tick, one object per (value, time, source)."""

    def __init__(self) -> None:
        self.made: dict[tuple[float, datetime, str], Metric] = {}

    def fresh(self, value: float, at: datetime, source: str) -> Metric:
        key = (value, at, source)
        found = self.made.get(key)
        if found is None:
            found = self.made[key] = fresh(value, at, source)
        return found


class FieldReadings:
    """One model field's readings this tick (see the module docstring).

    `metrics` holds a `Metric` for every key this tick has something to say about: a reading,
    fresh or stale by its age; no data in the window; a series gone since the last tick (its
    last value, stale). `get(key)` answers those, else the last tick's reading stale (when this
    tick's family failed), else `default`."""

    def __init__(
        self,
        default: Metric,
        *,
        readings: Readings | None = None,
        now: datetime | None = None,
        source: str = "",
        bound: float = 0.0,
        previous: FieldReadings | None = None,
        shared: Shared | None = None,
    ) -> None:
        self.default = default
        self.readings = readings
        self.source = source
        self.previous = previous
        self.carried: dict[str, tuple[float, datetime]] = {}
        """Keys whose series went away: their last value and its time (kept stale)."""
        self.times: dict[float, datetime] = {}
        """Series scraped together share their age: one datetime per age, not per series."""
        self.metrics: dict[str, Metric] = {}
        if readings is not None:
            assert now is not None
            self._make(readings, now, bound, shared or Shared())

    def _make(self, readings: Readings, now: datetime, bound: float, shared: Shared) -> None:
        times = self.times
        source, marked = self.source, readings.marked
        marked_source = f"{source} (unified memory: host memory)"
        ages, out, made = readings.ages, self.metrics, shared.made
        for key, value in readings.values.items():
            age = ages[key]
            at = times.get(age)
            if at is None:
                at = times[age] = now - timedelta(seconds=age)
            if age > bound:
                why = f"{source}: sample {age:.0f} s old (bound {bound:g} s)"
                out[key] = metric(value, "stale", at, why)
                continue
            said = marked_source if marked and key in marked else source
            # Shared.fresh inlined: once per card and family.
            found = made.get((value, at, said))
            if found is None:
                found = made[(value, at, said)] = fresh(value, at, said)
            out[key] = found

    def value(self, key: str) -> float | None:
        readings = self.readings
        return None if readings is None else readings.values.get(key)

    def last(self, key: str) -> tuple[float, datetime] | None:
        """This field's reading of `key` (value, time), if it has one."""
        readings = self.readings
        if readings is not None:
            value = readings.values.get(key)
            if value is not None:
                return value, self.times[readings.ages[key]]
        return self.carried.get(key)

    def get(self, key: str) -> Metric:
        found = self.metrics.get(key)
        return found if found is not None else self.missing(key)

    def missing(self, key: str) -> Metric:
        """What a key without a reading this tick gets: its last one stale, else the default."""
        if self.previous is not None:
            last = self.previous.last(key)
            if last is not None:
                return metric(last[0], "stale", last[1], self.default.source)
        return self.default

    def override(self, key: str, found: Metric) -> None:
        """No data in the window, or a series gone: this says so instead of a reading."""
        self.metrics[key] = found
