"""`FieldReadings`: one model field's readings of one tick, as the `Metric`s the join hands out.

A family's answer (tools.metrics.prometheus.join.Readings: a value and an age per card UUID or
workload name) becomes one `Metric` per key — fresh, or stale by its age — made in one pass
over the keys, so that building the observation is a dictionary lookup per card and field.
Where readings of one sample time are many — every card scraped from one exporter — those that
say the same thing share one `Metric` (they are immutable): every card at 100 % utilization is
the same object. With an exporter per node each node's readings have their own time, so they are
made in one batch instead, sharing only the cards' total memory (one per node and card model);
a card family read as a column (tools.metrics.prometheus.readings) is made down that column, in
the card order the new observation is built in, and by key only when asked.
A field whose family failed this tick answers from the last one that did not, stale; a key with
nothing at all answers the field's default (why there is none).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from datetime import datetime, timedelta
from itertools import filterfalse, repeat

from tools.metric import Metric, MetricStatus, made, made_all
from tools.metrics.prometheus.last_readings import LastReadings
from tools.metrics.prometheus.readings import CardColumn, Readings


def metric(value: float | None, status: MetricStatus, at: datetime | None, source: str) -> Metric:
    return made(value, status, at, source)


def fresh(value: float, at: datetime, source: str) -> Metric:
    """`metric(value, "fresh", at, source)`: the hot path of a tick's join."""
    return made(value, "fresh", at, source)


def fresh_all(
    values: list[float], ats: list[datetime], source: str, *, alike: bool = False
) -> list[Metric]:
    """`fresh(value, at, source)` of each value and its time, made in one batch. `alike`: many
    share a value and time (the cards of one node and model have the same total memory), so
    one reading is made per distinct pair, all in C but the making."""
    if not alike:
        return made_all(values, "fresh", ats, source)
    pairs = list(zip(values, ats, strict=True))
    distinct = list(set(pairs))
    one_each = made_all([v for v, _ in distinct], "fresh", [at for _, at in distinct], source)
    return list(map(dict(zip(distinct, one_each, strict=True)).__getitem__, pairs))


class Bucket(dict[float, Metric]):
    """Fresh readings of one time and source, by value: a reading made on first asking.

    A dict, so that `bucket[value]` for a value already made — most of a fleet's, whose cards
    read alike — is answered by C code, also from `map` over a whole field at once."""

    def __init__(self, at: datetime, source: str) -> None:
        super().__init__()
        self.at = at
        self.source = source

    def add(self, values: Iterable[float]) -> None:
        """Readings of each of `values` not yet made, made all at once (`made_all`)."""
        new = list(set(values) - self.keys())
        self.update(zip(new, made_all(new, "fresh", repeat(self.at), self.source), strict=True))

    def __missing__(self, value: float) -> Metric:
        found = self[value] = fresh(value, self.at, self.source)
        return found


class Instants(dict[float, datetime]):
    """Sample times by their age at `now`, each worked out on first asking: a scrape target's
    series of every family share theirs."""

    def __init__(self, now: datetime) -> None:
        super().__init__()
        self.now = now

    def __missing__(self, age: float) -> datetime:
        found = self[age] = self.now - timedelta(seconds=age)
        return found

    def of(self, ages: list[float]) -> list[datetime]:
        """The instant of each of `ages`: those not yet worked out, all at once in C (a fleet's
        card family holds a thousand, one per scrape target)."""
        new = list(filterfalse(self.__contains__, ages))
        self.update(zip(new, map(self.now.__sub__, map(timedelta, repeat(0), new)), strict=True))
        return list(map(self.__getitem__, ages))


class Shared:
    """Fresh readings of one tick, one object per (value, time, source)."""

    def __init__(self) -> None:
        self.buckets: dict[tuple[datetime, str], Bucket] = {}
        """Per (time, source): the readings made, by value."""
        self._instants: dict[datetime, Instants] = {}
        self._columns: dict[tuple[int, datetime], tuple[list[float], list[datetime]]] = {}
        """By a column of ages (its identity, kept alive here) and `now`: its instants."""

    def instants(self, now: datetime) -> Instants:
        """The sample times of this tick's readings by their age at `now`."""
        found = self._instants.get(now)
        if found is None:
            found = self._instants[now] = Instants(now)
        return found

    def column(self, ages: list[float], now: datetime) -> list[datetime]:
        """The instant of each of a column's `ages` at `now`: worked out once for the card
        families of a tick that share their ages (tools.metrics.prometheus.indexes' `ages`)."""
        found = self._columns.get((id(ages), now))
        if found is None:
            instants = self.instants(now)
            found = (ages, list(map(instants.__getitem__, ages)))
            self._columns[(id(ages), now)] = found
        return found[1]

    def bucket(self, at: datetime, source: str) -> Bucket:
        found = self.buckets.get((at, source))
        if found is None:
            found = self.buckets[(at, source)] = Bucket(at, source)
        return found

    def fresh(self, value: float, at: datetime, source: str) -> Metric:
        return self.bucket(at, source)[value]


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
        previous: LastReadings | None = None,
        shared: Shared | None = None,
        positions: dict[str, int] | None = None,
    ) -> None:
        self.default = default
        self.source = source
        self.previous = previous
        """The last tick's readings that answered (this tick's family failed, or a key of
        theirs has none now)."""
        self.this_tick = LastReadings(readings, {}, {}, positions)
        """This tick's values and times (`readings`, `times`, `carried`): what the next tick
        needs of them, not the `Metric`s."""
        self._now = now
        self._metrics: dict[str, Metric] | None = {}
        """By key (None: made from `_column` on first asking)."""
        self._column: list[Metric] | None = None
        """The readings in the card order, when the answer was read as a column (`CardColumn`):
        a hole's card what `missing` says, and a card said otherwise since (`override`) that."""
        self._instants: list[datetime] | None = None
        """Beside `_column`: each card's sample time (a stand-in's where `_said`)."""
        self._said: set[int] = set()
        """Positions in `_column` of cards without this tick's own reading: holes, and cards
        said otherwise since."""
        self._uniform: Bucket | None = None
        self._fresh = False
        """Every reading in `metrics` is this tick's, fresh and unmarked."""
        self._pending: tuple[Readings, float, Shared] | None = None
        """The readings not yet made into `Metric`s: made on first asking, as a family's may
        never be (a card's free memory only completes its total, from the values)."""
        if readings is not None:
            assert now is not None
            shared = shared or Shared()
            # One per scrape target, not per card; the same for every family of one target.
            ages = list(readings.distinct_ages())
            self.times = dict(zip(ages, shared.instants(now).of(ages), strict=True))
            self._pending = (readings, bound, shared)

    @property
    def readings(self) -> Readings | None:
        return self.this_tick.readings

    @property
    def times(self) -> dict[float, datetime]:
        """Series scraped together share their age: one datetime per age, not per series."""
        return self.this_tick.times

    @times.setter
    def times(self, times: dict[float, datetime]) -> None:
        self.this_tick.times = times

    @property
    def carried(self) -> dict[str, tuple[float, datetime]]:
        """Keys whose series went away: their last value and its time (kept stale)."""
        return self.this_tick.carried

    def _ready(self) -> None:
        if self._pending is not None:
            readings, bound, shared = self._pending
            self._pending = None
            self._make(readings, bound, shared)

    @property
    def metrics(self) -> dict[str, Metric]:
        self._ready()
        if self._metrics is None:  # made down a column: by key only once asked so
            readings = self.readings
            assert self._column is not None and readings is not None
            assert readings.column is not None
            self._metrics = dict(zip(readings.column.order, self._column, strict=True))
        return self._metrics

    def column(self, order: list[str]) -> list[Metric] | None:
        """Every card's reading in the card order `order`, when this tick's answer was read as
        a column in it (none missing, none said otherwise since); else None: ask by key."""
        self._ready()
        readings = self.readings
        if self._column is None or readings is None or not readings.in_order(order):
            return None
        return self._column

    def instants(self, order: list[str]) -> list[datetime] | None:
        """Beside `column(order)`: each card's sample time."""
        return self._instants if self.column(order) is not None else None

    @property
    def uniform(self) -> Bucket | None:
        """The bucket every reading in `metrics` came from, when they all did (one sample
        time, all fresh): what is worked out from them can be made in one batch too."""
        self._ready()
        return self._uniform

    @property
    def said(self) -> set[int]:
        """Positions in `column` of cards without this tick's own reading (see `_said`); not
        made into readings for this (a card's free memory may only complete its total)."""
        if self._pending is not None:
            column = self._pending[0].column
            return set(column.holes) if column is not None else set()
        return self._said

    @property
    def fresh(self) -> bool:
        """Every reading in `metrics` is this tick's, fresh and not marked otherwise: what is
        worked out from them can be made in one batch too."""
        self._ready()
        return self._fresh

    def _make(self, readings: Readings, bound: float, shared: Shared) -> None:
        source, times = self.source, self.times
        if readings.marked or (times and max(times) > bound):  # `times`: by every age read
            self._make_each(readings, bound, shared)
            return
        if readings.column is not None:
            self._make_column(readings.column, shared)
            return
        ages, values = readings.ages, readings.values
        if len(times) == 1:  # one sample time (one scrape target): one bucket, read in C
            (at,) = times.values()
            one = shared.bucket(at, source)
            one.add(values.values())  # the readings not made yet, all at once
            self._metrics = dict(zip(values, map(one.__getitem__, values.values()), strict=True))
            self._uniform = one
            self._fresh = True
            return
        # A sample time per scrape target (a DCGM exporter per node): readings of one time
        # and value are rare, so each is made, all in one batch.
        keys = list(values)
        ats = list(map(times.__getitem__, map(ages.__getitem__, keys)))
        self._metrics = dict(zip(keys, fresh_all(list(values.values()), ats, source), strict=True))
        self._fresh = True

    def _make_column(self, column: CardColumn, shared: Shared) -> None:
        """`_make` of a column: the readings in the card order, made down it in one batch."""
        values, times = column.values, self.times
        if len(times) == 1:  # one scrape target for every card: its bucket, as `_make`'s
            (at,) = times.values()
            one = shared.bucket(at, self.source)
            one.add(values)
            self._column = list(map(one.__getitem__, values))
            self._instants = [at] * len(values)
            self._uniform = one
        else:
            assert self._now is not None
            self._instants = shared.column(column.ages, self._now)
            self._column = fresh_all(values, self._instants, self.source)
        self._metrics = None
        self._fresh = True
        if column.holes:  # cards whose exporter did not answer: no reading of theirs
            made = self._column
            for hole in column.holes:
                made[hole] = self.missing(column.order[hole])
            self._said = set(column.holes)
            self._uniform, self._fresh = None, False

    def _make_each(self, readings: Readings, bound: float, shared: Shared) -> None:
        """`_make` where some readings are stale or marked as taken from host memory."""
        source, marked = self.source, readings.marked
        marked_source = f"{source} (unified memory: host memory)"
        made = self._metrics = {}
        for key, value in readings.values.items():
            age = readings.ages[key]
            at = self.times[age]
            if age > bound:
                why = f"{source}: sample {age:.0f} s old (bound {bound:g} s)"
                made[key] = metric(value, "stale", at, why)
            else:
                said = marked_source if key in marked else source
                made[key] = shared.fresh(value, at, said)

    def value(self, key: str) -> float | None:
        readings = self.readings
        return None if readings is None else readings.values.get(key)

    def last(self, key: str) -> tuple[float, datetime] | None:
        """This field's reading of `key` (value, time), if it has one."""
        return self.this_tick.last(key)

    def every(self, keys: list[str], known: AbstractSet[str]) -> dict[str, Metric]:
        """`get` of each of `keys` (the set of them: `known`), as one dictionary — the readings
        themselves when none is missing."""
        found = self.metrics
        if len(found) == len(known) and found.keys() == known:
            return found
        return {**{key: self.missing(key) for key in keys if key not in found}, **found}

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
        self._ready()
        column, at = self._column, self.this_tick.place(key)
        if column is not None and at is not None:
            column[at] = found  # said in the column, which stays
            if self._metrics is not None:
                self._metrics[key] = found
            self._said.add(at)
            self._uniform, self._fresh = None, False
            return
        self.metrics[key] = found
        self._column = self._instants = None
        self._uniform = None
        self._fresh = False
