"""`LastReadings`: a family's readings of one tick, as the next tick needs them.

A family that fails next tick answers from this one's values, stale, each with its own sample
time; a series gone by next tick leaves its last value, stale. Only values and times are kept,
not the `Metric`s made of them (tools.metrics.prometheus.fields): those belong to the
observation they were made for and go with it, not with the source, so that a tick's join never
frees the last tick's thousands of readings.
"""

from __future__ import annotations

from datetime import datetime

from tools.metrics.prometheus.readings import Readings


class LastReadings:
    """Each key's value and sample time this tick: read (`readings`, whose ages `times` makes
    instants), or carried stale from the tick before (`carried`)."""

    __slots__ = ("carried", "positions", "readings", "times")

    def __init__(
        self,
        readings: Readings | None,
        times: dict[float, datetime],
        carried: dict[str, tuple[float, datetime]],
        positions: dict[str, int] | None = None,
    ) -> None:
        self.readings = readings
        self.times = times
        """Each age the readings hold, as the instant it stands for."""
        self.carried = carried
        """Keys whose series went away: their last value and its time (kept stale)."""
        self.positions = positions
        """Each card's place in the card order, where the readings were read as a column in
        it: a card's value is read in its place, without a dictionary of 8,000 cards."""

    def last(self, key: str) -> tuple[float, datetime] | None:
        """The reading of `key` (value, time), if there is one."""
        readings = self.readings
        if readings is not None:
            column = readings.column
            if column is not None and self.positions is not None:  # read in its place, no dict
                at = self.place(key)
                if at is not None and at not in column.hole_set:
                    return column.values[at], self.times[column.ages[at]]
                return self.carried.get(key)
            value = readings.values.get(key)
            if value is not None:
                return value, self.times[readings.ages[key]]
        return self.carried.get(key)

    def place(self, key: str) -> int | None:
        """`key`'s place in the column the readings were read as (None: not read so, or not
        there)."""
        read, positions = self.readings, self.positions
        if read is None or read.column is None or positions is None:
            return None
        at = positions.get(key)
        return at if at is not None and read.column.order[at] == key else None
