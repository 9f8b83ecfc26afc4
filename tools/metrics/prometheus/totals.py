"""`Totals`: each card's total memory, as DCGM gives it: the used and the free memory added.

DCGM exports no total; a card's is its used plus its free framebuffer, as trusted as the less
trusted of the two, and shared like any reading (the cards of one model on one node have the
same total at the same time). Both read as columns in the card order, they are added down the
columns; a card without this tick's reading of either is made on its own.
"""

from __future__ import annotations

from datetime import datetime
from operator import add

from tools.metrics.prometheus.fields import FieldReadings, Shared, fresh_all, metric
from tools.model import Metric


class Totals:
    """A card's memory as used + free, as trusted as the less trusted of the two (shared like
    any reading: the cards of one model have the same total)."""

    def __init__(self, free: FieldReadings, shared: Shared) -> None:
        self.free = free
        self.shared = shared
        self.made: dict[tuple[int, float], Metric] = {}
        """By the used reading's identity (alive all tick, so never reused) and the free value."""

    @property
    def values(self) -> dict[str, float]:
        """This tick's free value of each card that has one."""
        return self.free.readings.values if self.free.readings is not None else {}

    def batch(self, used: FieldReadings, uuids: list[str]) -> list[Metric] | None:
        """`every`, the totals added and made in one batch — in the bucket of their one sample
        time when they have one (`used.uniform`): when both used and free were read as columns
        in the card order (`uuids`), the cards without this tick's reading of either made one
        by one; else when every card has this tick's free value and a fresh used reading
        (`used.fresh`). None otherwise."""
        read, free_read = used.readings, self.free.readings
        if read is None:
            return None
        column = used.column(uuids)
        if column is not None and free_read is not None and free_read.in_order(uuids):
            assert read.column is not None and free_read.column is not None
            totals = list(map(add, read.column.values, free_read.column.values))
            instants = used.instants(uuids)
            assert instants is not None
            made = self._made(used, totals, instants)
            for at in used.said | self.free.said:  # holes, series gone: what they say
                made[at] = self.of(column[at], uuids[at])
            return made
        if not used.fresh or len(used.metrics) != len(uuids):
            return None  # some card's used reading is missing, stale or said otherwise
        free = list(map(self.values.get, uuids))
        if None in free:
            return None
        totals = list(map(add, map(read.values.__getitem__, uuids), free))
        ats: list[datetime] = []  # no need of them with one bucket
        if used.uniform is None:  # a sample time per scrape target
            ats = list(map(used.times.__getitem__, map(read.ages.__getitem__, uuids)))
        return self._made(used, totals, ats)

    def _made(self, used: FieldReadings, totals: list[float], ats: list[datetime]) -> list[Metric]:
        bucket = used.uniform
        if bucket is None:
            return fresh_all(totals, ats, used.source, alike=True)
        bucket.add(totals)
        return list(map(bucket.__getitem__, totals))

    def every(self, used: list[Metric], uuids: list[str]) -> list[Metric]:
        """`of` each card's used reading and UUID; the common case (a fresh used reading,
        this tick's free value) without a call per card."""
        free = self.values.get
        shared = self.shared
        out: list[Metric] = []
        append = out.append
        for reading, uuid in zip(used, uuids, strict=True):
            free_value = free(uuid)
            value = reading.value
            if free_value is None or value is None or reading.status != "fresh":
                append(self.of(reading, uuid))
                continue
            at = reading.observed_at
            assert at is not None
            append(shared.bucket(at, reading.source)[value + free_value])
        return out

    def of(self, used: Metric, uuid: str) -> Metric:
        free_value = self.values.get(uuid)
        if free_value is not None and used.status == "fresh" and used.value is not None:
            # The common case, shared by the used reading (itself shared) and the free value.
            key = (id(used), free_value)
            found = self.made.get(key)
            if found is None:
                assert used.observed_at is not None
                found = self.made[key] = self.shared.fresh(
                    used.value + free_value, used.observed_at, used.source
                )
            return found
        stale = False
        if free_value is None:
            free = self.free
            last = free.last(uuid)
            if last is None and free.previous is not None:
                last = free.previous.last(uuid)
            if last is None:
                return free.get(uuid) if used.value is not None else used  # it says why
            free_value, stale = last[0], True
        if used.value is None or used.observed_at is None:
            return used
        if stale or used.status != "fresh":
            return metric(used.value + free_value, "stale", used.observed_at, used.source)
        return self.shared.fresh(used.value + free_value, used.observed_at, used.source)
