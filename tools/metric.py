"""`Metric`: one measured value and how far it can be trusted — the world model's reading.

A fleet's observation holds tens of thousands of readings, made afresh every tick (four a card,
six a workload). So a reading is a slotted, frozen pydantic dataclass rather than a model: a
quarter of a model's memory. To everything else it is as a model's field: validated when built by
name or read from
JSON (unknown keys refused), dumped as an object, compared by value, hashable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter
from pydantic.dataclasses import dataclass

MetricStatus = Literal["fresh", "stale", "missing"]


@dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class Metric:
    """One measured value and how much it can be trusted.

    `value` is None exactly when the reading is missing. A stale reading keeps the last value it
    had, so a reader can show it, but `usable` is False for it.
    """

    value: float | None = None
    status: MetricStatus = "missing"
    observed_at: datetime | None = None
    source: str = ""

    @classmethod
    def fresh(cls, value: float, at: datetime, source: str = "") -> Metric:
        return cls(value=value, status="fresh", observed_at=at, source=source)

    @classmethod
    def missing(cls, source: str = "") -> Metric:
        return cls(source=source)

    @property
    def usable(self) -> bool:
        return self.status == "fresh" and self.value is not None

    def age_s(self, now: datetime) -> float | None:
        """Seconds since the reading was taken, or None if it never was."""
        if self.observed_at is None:
            return None
        return (now - self.observed_at).total_seconds()

    def aged(self, now: datetime, max_age_s: float) -> Metric:
        """This reading, marked stale if it is older than `max_age_s`."""
        age = self.age_s(now)
        if self.status == "fresh" and age is not None and age > max_age_s:
            return self.but(status="stale")
        return self

    def but(self, **changes: Any) -> Metric:
        """This reading with `changes` (validated, as a new reading is)."""
        return dataclasses.replace(self, **changes)

    def as_json(self) -> dict[str, Any]:
        """This reading as a JSON object (`observed_at` in ISO 8601), as a model's dump."""
        dumped: dict[str, Any] = _ADAPTER.dump_python(self, mode="json")
        return dumped

    @classmethod
    def parse(cls, raw: object) -> Metric:
        """A reading from its JSON object (`as_json`), validated: ValidationError if not one."""
        return _ADAPTER.validate_python(raw)


MISSING = Metric()
_ADAPTER: TypeAdapter[Metric] = TypeAdapter(Metric)


def made(value: float | None, status: MetricStatus, at: datetime | None, source: str) -> Metric:
    """A reading of these values (a metric source's join, the simulator)."""
    return Metric(value, status, at, source)


def made_all(
    values: list[float], status: MetricStatus, ats: Iterable[datetime | None], source: str
) -> list[Metric]:
    """`made` of each value and its time, all of one status and source."""
    return [Metric(value, status, at, source) for value, at in zip(values, ats, strict=False)]
