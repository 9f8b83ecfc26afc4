"""`Vector`: Prometheus's answer to one instant query, decoded by `json`, its labels as columns.

The join reads a few labels of every series (a card's `UUID`, a pod's name and namespace, the
sample time in `steward_t`), each down the whole answer: `column` gives one label of every
series, in the answer's order, read from the decoded label sets.
"""

from __future__ import annotations

import json
import math
from itertools import repeat
from typing import cast

Series = list[tuple[dict[str, str], float]]


class Vector:
    """The series of one instant query — labels and values — and when it was evaluated.

    Not a pydantic model: the client checks the answer's envelope (tools.metrics.prometheus
    .client.vector_of) and hands over the label sets `json` decoded as they are."""

    __slots__ = ("_columns", "_labels", "_values", "evaluated_at")

    def __init__(self, evaluated_at: float, series: Series) -> None:
        self.evaluated_at = evaluated_at
        """POSIX seconds, on Prometheus's clock."""
        self._labels: list[dict[str, str]] = [labels for labels, _ in series]
        self._values: list[float] = [value for _, value in series]
        self._columns: dict[str, list[str | None]] = {}

    def __len__(self) -> int:
        return len(self._values)

    @property
    def values(self) -> list[float]:
        """Each series' value, in the answer's order."""
        return self._values

    @property
    def labels(self) -> list[dict[str, str]]:
        """Each series' label set, in the answer's order."""
        return self._labels

    @property
    def series(self) -> Series:
        return list(zip(self._labels, self._values, strict=True))

    @property
    def first(self) -> dict[str, str]:
        """The first series' label set ({} when there is none)."""
        return self._labels[0] if self._labels else {}

    def column(self, name: str) -> list[str | None]:
        """Label `name` of every series, in the answer's order (None where one lacks it)."""
        found = self._columns.get(name)
        if found is None:
            found = self._columns[name] = list(map(dict.get, self._labels, repeat(name)))
        return found

    def whole(self, name: str) -> list[str] | None:
        """`column(name)` when every series carries the label; else None."""
        column = self.column(name)
        return None if None in column else cast("list[str]", column)

    def carries(self, name: str) -> bool:
        """Whether any series carries label `name`."""
        return any(name in labels for labels in self._labels)

    def after(self, count: int) -> Vector:
        """The series after the first `count`."""
        if count == 0:
            return self
        return Vector(self.evaluated_at, self.series[count:])

    @property
    def text(self) -> str:
        """The answer as Prometheus writes it (compact JSON, each label set's names sorted)."""
        result = [
            {"metric": dict(sorted(labels.items())), "value": [self.evaluated_at, _text(v)]}
            for labels, v in self.series
        ]
        data = {"resultType": "vector", "result": result}
        return json.dumps(
            {"status": "success", "data": data}, separators=(",", ":"), ensure_ascii=False
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vector):
            return NotImplemented
        return self.evaluated_at == other.evaluated_at and self.series == other.series

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Vector(evaluated_at={self.evaluated_at!r}, series={self.series!r})"


def number(text: str) -> float | None:
    """A label's text as a number (a `steward_t` sample time); None should it not be one."""
    try:
        return float(text)
    except ValueError:
        return None


def numbers(texts: list[str]) -> list[float | None]:
    """`number` of each text."""
    return list(map(number, texts))


def _text(value: float) -> str:
    """A sample value as Prometheus writes it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)
