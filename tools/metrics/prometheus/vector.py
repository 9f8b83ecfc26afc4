"""`Vector`: Prometheus's answer to one instant query, its labels read as columns.

The join reads a few labels of every series (a card's `UUID`, a pod's name and namespace, the
sample time in `steward_t`), each down the whole answer. Prometheus writes its JSON compactly,
with every label set's names sorted and no escape where no label value needs one; an answer so
written is read straight into those columns — each label with one scan of the text in C, the
values with another — without a dictionary per series. Any other answer (an escape, a proxy that
reformats, a native histogram, a label that some series lack) is decoded by `json` into label
sets, and its columns are read from them: the same columns, only slower
(tests/metrics/test_vector.py holds both to each other).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from itertools import repeat
from typing import Any, cast

Series = list[tuple[dict[str, str], float]]

_PREFIX = '{"status":"success","data":{"resultType":"vector","result":['
_ITEM = '{"metric":{'
_VALUE = re.compile(r'\},"value":\[[^,\]]*,"([^"]*)"\]\}')
"""A series' value text, closing its label set: one per series, in order."""
_FIRST = re.compile(r'\{"metric":(\{.*?\}),"value":\[([^,\]]*),')
"""The first series' label set and evaluation time (matched where it starts: no quote can hide
in a value unescaped, so the first `},"value":[` closes its label set)."""
_END = '"]}]}'
"""The last series' value, the result and the data closed: nowhere else in such a text."""
_LABELS: dict[str, re.Pattern[str]] = {}


def _label(name: str) -> re.Pattern[str]:
    found = _LABELS.get(name)
    if found is None:
        found = _LABELS[name] = re.compile(f'"{re.escape(name)}":"([^"]*)"')
    return found


class Vector:
    """The series of one instant query — labels and values — and when it was evaluated.

    Made from label sets (`Vector(evaluated_at, series)`) or from Prometheus's JSON text
    (`from_json`); either answers `column`, `values`, `labels` and `series` alike. Not a
    pydantic model: its tens of thousands of label sets come from Prometheus as they are, and
    validating them again would cost more than the join."""

    __slots__ = (
        "_columns",
        "_end",
        "_labels",
        "_text",
        "_values",
        "_whole",
        "evaluated_at",
        "scanned",
    )

    def __init__(self, evaluated_at: float, series: Series) -> None:
        self.evaluated_at = evaluated_at
        """POSIX seconds, on Prometheus's clock."""
        self._labels: list[dict[str, str]] | None = [labels for labels, _ in series]
        self._values: list[float] = [value for _, value in series]
        self._columns: dict[str, list[str | None]] = {}
        self._whole: dict[str, bool] = {}
        """Per column read: whether every series carries the label."""
        self._text: str | None = None
        self._end = 0
        """Where the series end in `_text`."""
        self.scanned = False
        """Read by scanning Prometheus's text (`from_json`), not from label sets."""

    @classmethod
    def from_json(cls, text: str, *, empty_at: float, columns: Iterable[str] = ()) -> Vector | None:
        """The vector of an /api/v1/query answer as Prometheus writes it, with `columns` read
        at once (others on first asking); None when the text is not so written (decode it with
        `json`). `empty_at` dates an answer without series, which carries no time."""
        if not text.startswith(_PREFIX) or "\\" in text:
            return None  # an escape: a quote may hide in a value, scans cannot tell
        start = len(_PREFIX)
        end = text.find(_END, start)
        if end == -1:
            if not text.startswith("]}", start):
                return None
            end = start  # no series
        else:
            end += 3  # the last series' own `"]}`
        rest = text[end + 2 :]
        if rest != "}" and not (rest.startswith(",") and rest.endswith("}")):
            return None  # cut short, or more than Prometheus writes after the result
        texts = _VALUE.findall(text, start, end)
        if len(texts) != text.count(_ITEM, start, end):
            return None  # a series without a plain value (a native histogram), or reformatted
        out = cls.__new__(cls)
        out._text, out._labels, out._columns, out._whole, out._end = text, None, {}, {}, end
        out.scanned = True
        try:
            out._values = list(map(float, texts))
        except ValueError:
            return None
        if not texts:
            out.evaluated_at = empty_at
            return out
        first = _FIRST.match(text, start)
        if first is None:
            return None
        out.evaluated_at = float(first.group(2))
        for name in columns:
            out.column(name)
        return out

    def __len__(self) -> int:
        return len(self._values)

    @property
    def values(self) -> list[float]:
        """Each series' value, in the answer's order."""
        return self._values

    @property
    def labels(self) -> list[dict[str, str]]:
        """Each series' label set, in the answer's order (decoded on first asking)."""
        if self._labels is None:
            assert self._text is not None
            result = json.loads(self._text)["data"]["result"]
            self._labels = [item["metric"] for item in result]
        return self._labels

    @property
    def series(self) -> Series:
        return list(zip(self.labels, self._values, strict=True))

    @property
    def first(self) -> dict[str, str]:
        """The first series' label set ({} when there is none)."""
        if not self._values:
            return {}
        if self._labels is not None:
            return self._labels[0]
        assert self._text is not None
        found = _FIRST.match(self._text, len(_PREFIX))
        assert found is not None  # from_json found it
        labels: dict[str, str] = json.loads(found.group(1))
        return labels

    def column(self, name: str) -> list[str | None]:
        """Label `name` of every series, in the answer's order (None where one lacks it)."""
        found = self._columns.get(name)
        if found is not None:
            return found
        count = len(self._values)
        column: list[str | None]
        if self._labels is None and self._text is not None:
            scanned: list[Any] = _label(name).findall(self._text, len(_PREFIX), self._end)
            if len(scanned) == count:
                column = scanned
                self._whole[name] = True
            elif not scanned:
                column = [None] * count
            else:  # some series carry it, others not: which, their label sets tell
                column = list(map(dict.get, self.labels, repeat(name)))
        else:
            column = list(map(dict.get, self.labels, repeat(name)))
        self._columns[name] = column
        return column

    def whole(self, name: str) -> list[str] | None:
        """`column(name)` when every series carries the label; else None."""
        column = self.column(name)
        whole = self._whole.get(name)
        if whole is None:
            whole = self._whole[name] = None not in column
        return cast("list[str]", column) if whole else None

    def carries(self, name: str) -> bool:
        """Whether any series carries label `name`."""
        if name in self._columns:
            return self._columns[name].count(None) != len(self._values)
        if self._labels is None and self._text is not None:
            return self._text.find(f'"{name}":"', len(_PREFIX), self._end) != -1
        return any(name in labels for labels in self._labels or ())

    def after(self, count: int) -> Vector:
        """The series after the first `count`."""
        if count == 0:
            return self
        return Vector(self.evaluated_at, self.series[count:])

    @property
    def text(self) -> str:
        """The answer as Prometheus writes it: its own text, or one written the same way."""
        if self._text is None:
            result = [
                {"metric": dict(sorted(labels.items())), "value": [self.evaluated_at, _text(v)]}
                for labels, v in self.series
            ]
            data = {"resultType": "vector", "result": result}
            self._text = json.dumps(
                {"status": "success", "data": data}, separators=(",", ":"), ensure_ascii=False
            )
        return self._text

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
    """`number` of each text, all in C when all are numbers (as Prometheus writes them)."""
    try:
        return list(map(float, texts))
    except ValueError:
        return list(map(number, texts))


def _text(value: float) -> str:
    """A sample value as Prometheus writes it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)
