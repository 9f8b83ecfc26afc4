"""A card family's answer read as a column: the common shape of DCGM's, in the card order.

The default query of a card family answers one series per card, each dated by its own
`steward_t` (one DaemonSet exporter per node; tools.metrics.prometheus.queries). When that is
all the answer holds — every card of the observation once, by a UUID it knows, no series marked
as host memory, no NaN — its values and ages are put straight into the observation's card order
(each series to its card's position, in C) rather than into dictionaries by UUID: what follows
then works down the column. Any other answer is read by keys (tools.metrics.prometheus.join),
which this must agree with to the value and the second (tests/metrics/test_prometheus_join.py).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, cast

from tools.metrics.prometheus.queries import STAMP, UNIFIED_LABEL
from tools.metrics.prometheus.readings import CardColumn, Readings

if TYPE_CHECKING:
    from tools.metrics.prometheus.indexes import CardIndex

_UNSET: list[object] = [None]
"""What a position no series filled holds: `None`, found again by one `in` (in C)."""


def card_column(
    labels: list[dict[str, str]],
    series: list[tuple[dict[str, str], float]],
    cards: CardIndex,
    *,
    evaluated: float,
    times: Callable[[str], float | None],
    scale: float,
    marked: bool,
) -> Readings | None:
    """The answer of a card family's default query as a `CardColumn`, or None when it is not
    one series per card of the observation, each with its own sample time, none marked or NaN.

    `labels` are the series' label sets (in the answer's order), `times` makes a `steward_t`
    text a POSIX time (None: not a number, so undated and of age 0, as the join has it);
    `marked`: the family's series may be marked as taken from host memory (a memory family)."""
    order = cards.order
    count = len(order)
    if len(labels) != count:
        return None
    get = dict.get
    if marked and list(map(get, labels, repeat(UNIFIED_LABEL))).count(None) != count:
        return None  # some series taken from host memory: read by keys, which marks them
    position = cast("Callable[[str | None], int | None]", cards.position.get)
    found = list(map(position, map(get, labels, repeat("UUID"))))
    if None in found:
        return None  # a series of no card here (or named by its node and index)
    found_texts = list(map(get, labels, repeat(STAMP)))
    if None in found_texts:
        return None
    positions, texts = cast("list[int]", found), cast("list[str]", found_texts)
    raws = list(map(itemgetter(1), series))
    total = sum(raws)
    if total != total:  # noqa: PLR0124 - a NaN among them
        return None
    placed = _UNSET * count
    for _ in map(placed.__setitem__, positions, raws if scale == 1 else map(scale.__mul__, raws)):
        pass
    if None in placed:
        return None  # two series of one card (so another has none): combined by keys
    stamps = _UNSET * count
    for _ in map(stamps.__setitem__, positions, texts):
        pass
    # One sample time per scrape target: each made an age once.
    age_of: dict[object, float] = {text: _age(times(text), evaluated) for text in set(texts)}
    column = CardColumn(
        order=order,
        values=cast("list[float]", placed),  # every position filled: floats alone
        ages=list(map(age_of.__getitem__, stamps)),
        distinct_ages=frozenset(age_of.values()),
    )
    return Readings(column=column)


def _age(at: float | None, evaluated: float) -> float:
    return 0.0 if at is None else max(0.0, evaluated - at)
