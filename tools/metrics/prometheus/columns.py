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

from functools import partial
from typing import TYPE_CHECKING

from tools.metrics.prometheus.queries import STAMP, UNIFIED_LABEL
from tools.metrics.prometheus.readings import CardColumn, Readings
from tools.metrics.prometheus.vector import numbers

if TYPE_CHECKING:
    from tools.metrics.prometheus.indexes import CardIndex, Placing
    from tools.metrics.prometheus.vector import Vector


def card_column(
    answer: Vector,
    cards: CardIndex,
    *,
    evaluated: float,
    scale: float,
    marked: bool,
) -> Readings | None:
    """The answer of a card family's default query as a `CardColumn`, or None when it is not
    at most one series per card of the observation, each with its own sample time, none marked
    or NaN. Cards without a series are the column's holes.

    Ages are measured from `evaluated` (Prometheus's time, the tick's clock); a `steward_t` text
    that is not a number leaves its series undated, of age 0, as the join has it. `marked`: the
    family's series may be marked as taken from host memory (a memory family)."""
    order = cards.order
    count = len(order)
    if not answer or len(answer) > count:
        return None
    if marked and answer.carries(UNIFIED_LABEL):
        return None  # some series taken from host memory: read by keys, which marks them
    placing = cards.positions(answer.column("UUID"))
    if placing is None:
        return None  # a series of no card here, or two of one (or named by node and index)
    texts = answer.whole(STAMP)
    if texts is None:
        return None
    raws = answer.values
    total = sum(raws)
    if total != total:  # noqa: PLR0124 - a NaN among them
        return None
    scaled = raws if scale == 1 else list(map(scale.__mul__, raws))
    placed = scaled
    if not placing.in_order:  # each card takes its series, a hole the stand-in after them
        if placing.holes:
            scaled = [*scaled, 0.0]  # never read as a card's
        placed = list(map(scaled.__getitem__, placing.taken))
    ages, distinct = card_ages(texts, placing, evaluated)
    column = CardColumn(
        order=order, values=placed, ages=ages, distinct_ages=distinct, holes=placing.holes
    )
    return Readings(column=column)


def card_ages(
    texts: list[str], placing: Placing, evaluated: float
) -> tuple[list[float], frozenset[float]]:
    """Each card's age at `evaluated`, in the card order, from its series' `steward_t` text
    (`texts`, in the answer's order), and the ages there are: one per scrape target, so each
    text is made an age once. A text that is not a number is of age 0, as the join has it."""
    stamps = texts
    if not placing.in_order:
        if placing.holes:
            texts = [*texts, texts[0]]  # a hole's stand-in, never read as a card's
        stamps = list(map(texts.__getitem__, placing.taken))
    distinct = list(set(texts))
    age_of = dict(zip(distinct, map(partial(_age, evaluated), numbers(distinct)), strict=True))
    return list(map(age_of.__getitem__, stamps)), frozenset(age_of.values())


def _age(evaluated: float, at: float | None) -> float:
    return 0.0 if at is None else max(0.0, evaluated - at)
