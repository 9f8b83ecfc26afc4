"""`Readings`: what one family's answer says, per card UUID or workload name.

Most answers are read into dictionaries by key (tools.metrics.prometheus.join). The common answer of
a card family — DCGM exporters' series, one per card of the observation, though a card whose
exporter did not answer has none (a hole) — is read as a `CardColumn` instead: its values and ages
in the observation's own card order, so that the cards' new readings are made straight down the
column (tools.metrics.prometheus.fields) and no dictionary of 8,000 cards is built, looked up and
freed per family and tick. Its dictionaries are made only when something asks for them by key (a
family that fails next tick answers from this one's `last` values).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class CardColumn:
    """A card family's reading of every card, in the observation's card order."""

    order: list[str]
    """Every card's UUID, node by node and card by card (tools.metrics.prometheus.indexes'
    `CardIndex.order`: the very list, so that a consumer knows the column is in its order)."""
    values: list[float]
    ages: list[float]
    """Seconds between each card's sample and the evaluation."""
    distinct_ages: frozenset[float]
    """The ages the column holds: one per scrape target, not per card."""
    holes: tuple[int, ...] = ()
    """Positions of cards no series read (their exporter did not answer): their value and age
    in the column stand for nothing."""

    @cached_property
    def hole_set(self) -> frozenset[int]:
        return frozenset(self.holes)


class Readings:
    """One family's answer per key: a value and an age, the keys of no data and of host memory.

    Built by keys (`values`, `ages`), or from a `CardColumn` whose dictionaries are made on
    first asking. Two are equal when they say the same of the same keys, however built."""

    __slots__ = ("_ages", "_values", "column", "marked", "no_data", "unmatched")

    def __init__(
        self,
        values: dict[str, float] | None = None,
        ages: dict[str, float] | None = None,
        *,
        column: CardColumn | None = None,
    ) -> None:
        self._values = values if values is not None or column is not None else {}
        self._ages = ages if ages is not None or column is not None else {}
        self.column = column
        """Every card read, in the card order (None: read by keys)."""
        self.no_data: set[str] = set()
        """Keys whose series answered NaN (a quantile over a window without requests)."""
        self.marked: set[str] = set()
        """Keys with a series marked as taken from host memory."""
        self.unmatched = 0
        """Series that matched no card or workload of the observation."""

    @property
    def values(self) -> dict[str, float]:
        if self._values is None:
            assert self.column is not None
            self._values = self.column_dict(self.column.values)
        return self._values

    @values.setter
    def values(self, values: dict[str, float]) -> None:
        self._values, self.column = values, None

    @property
    def ages(self) -> dict[str, float]:
        """Seconds between the newest sample of the key's oldest series and the evaluation."""
        if self._ages is None:
            assert self.column is not None
            self._ages = self.column_dict(self.column.ages)
        return self._ages

    @ages.setter
    def ages(self, ages: dict[str, float]) -> None:
        self._ages, self.column = ages, None

    def column_dict(self, items: list[float]) -> dict[str, float]:
        """A list down the column by card UUID, its holes left out."""
        column = self.column
        assert column is not None
        found = dict(zip(column.order, items, strict=True))
        for at in column.holes:
            del found[column.order[at]]
        return found

    def distinct_ages(self) -> Iterable[float]:
        column = self.column
        return column.distinct_ages if column is not None else set(self.ages.values())

    def covers(self, order: list[str]) -> bool:
        """Whether every card of the observation whose card order is `order` has a reading
        here (a column in that order, without holes): then none of them can have lost its
        series."""
        column = self.column
        return column is not None and column.order is order and not column.holes

    def in_order(self, order: list[str]) -> bool:
        """Whether this was read as a column in the card order `order` (holes or not)."""
        return self.column is not None and self.column.order is order

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Readings):
            return NotImplemented
        return (self.values, self.ages, self.no_data, self.marked, self.unmatched) == (
            other.values,
            other.ages,
            other.no_data,
            other.marked,
            other.unmatched,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by content

    def __repr__(self) -> str:
        return (
            f"Readings(values={self.values!r}, ages={self.ages!r}, no_data={self.no_data!r}, "
            f"marked={self.marked!r}, unmatched={self.unmatched})"
        )
