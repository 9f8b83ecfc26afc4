"""A card family's answer read as a column: the common shape of DCGM's, in the card order.

The default query of a card family answers one series per card, each dated by its own `steward_t`
(one DaemonSet exporter per node; tools.metrics.prometheus.queries). When that is all the answer
holds — each card of the observation at most once, by a UUID it knows, no series marked as host
memory, no NaN — its values and ages are put straight into the observation's card order (each series
to its card's position, in C) rather than into dictionaries by UUID: what follows then works down
the column. A card no series read (its node's exporter did not answer) is a hole in the column,
which says so as a dictionary would by not holding it. Any other answer is read by keys
(tools.metrics.prometheus.join), which this must agree with to the value and the second
(tests/metrics/test_prometheus_join.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from tools.metrics.prometheus.queries import STAMP, UNIFIED_LABEL
from tools.metrics.prometheus.readings import CardColumn, Readings

if TYPE_CHECKING:
    from tools.metrics.prometheus.indexes import CardIndex
    from tools.metrics.prometheus.vector import Vector

_UNSET: list[object] = [None]
"""What a position no series filled holds: `None`, found again by one `in` (in C)."""


def card_column(
    answer: Vector,
    cards: CardIndex,
    *,
    times: Callable[[str], float | None],
    scale: float,
    marked: bool,
) -> Readings | None:
    """The answer of a card family's default query as a `CardColumn`, or None when it is not
    at most one series per card of the observation, each with its own sample time, none marked
    or NaN. Cards without a series are the column's holes.

    `times` makes a `steward_t` text a POSIX time (None: not a number, so undated and of age 0,
    as the join has it); `marked`: the family's series may be marked as taken from host
    memory (a memory family)."""
    order = cards.order
    count = len(order)
    if not answer or len(answer) > count:
        return None
    if marked and answer.carries(UNIFIED_LABEL):
        return None  # some series taken from host memory: read by keys, which marks them
    placing = cards.positions(answer.column("UUID"))
    if placing is None:
        return None  # a series of no card here (or named by its node and index)
    positions, in_order = placing
    found_texts = answer.column(STAMP)
    if None in found_texts:
        return None
    texts = cast("list[str]", found_texts)
    raws = answer.values
    total = sum(raws)
    if total != total:  # noqa: PLR0124 - a NaN among them
        return None
    scaled = raws if scale == 1 else list(map(scale.__mul__, raws))
    holes: tuple[int, ...] = ()
    if in_order:  # as DCGM's exporters and Prometheus list them: nothing to move
        placed, stamps = cast("list[object]", scaled), cast("list[object]", texts)
    else:
        placed = _UNSET * count
        for _ in map(placed.__setitem__, positions, scaled):
            pass
        stamps = _UNSET * count
        for _ in map(stamps.__setitem__, positions, texts):
            pass
        if placed.count(None) != count - len(answer):
            return None  # two series of one card: combined by keys
        if count != len(answer):
            holes = _holes(placed)
            for at in holes:  # stand-ins, never read as a card's
                placed[at], stamps[at] = 0.0, texts[0]
    # One sample time per scrape target: each made an age once.
    evaluated = answer.evaluated_at
    age_of: dict[object, float] = {text: _age(times(text), evaluated) for text in set(texts)}
    column = CardColumn(
        order=order,
        values=cast("list[float]", placed),  # every position filled: floats alone
        ages=list(map(age_of.__getitem__, stamps)),
        distinct_ages=frozenset(age_of.values()),
        holes=holes,
    )
    return Readings(column=column)


def _holes(placed: list[object]) -> tuple[int, ...]:
    """The positions still unset, each found by a scan in C from the last."""
    found: list[int] = []
    at = -1
    for _ in range(placed.count(None)):
        at = placed.index(None, at + 1)
        found.append(at)
    return tuple(found)


def _age(at: float | None, evaluated: float) -> float:
    return 0.0 if at is None else max(0.0, evaluated - at)
