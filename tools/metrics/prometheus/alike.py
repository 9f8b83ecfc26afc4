"""A node's cards that read alike: one series of the node in a card family's answer, made one
series per card again before the join.

The recorded query of a card family (tools.metrics.prometheus.queries, `alike_recorded`) answers
a node whose cards all read the same value as one series: the node's labels, that value, the
node's sample time (`steward_t`) and how many card series it stands for (`steward_cards`). An
idle node's eight cards are one series instead of eight, and so is any node whose cards agree
to the unit (DCGM's utilization is a whole percent, its memory whole MiB). `spread` gives
each card of such a node its own series — the node's value and sample time under the card's
UUID — when the node is one of the observation's and the count is its number of cards: each
card then holds exactly the reading its own series would have given, and the join reads the
answer as it reads one of a series per card. A node series that cannot be so spread (a node
the observation does not hold, or whose exporter answers for more or fewer cards than the
observation has there: which card lacks a series, the count cannot say) is handed back: the
source asks for that node's cards one by one (`cards_recorded`), and until they come its cards
have no series this tick, as a card whose exporter did not answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.metrics.prometheus.queries import CARDS, STAMP
from tools.metrics.prometheus.vector import Series, Vector

if TYPE_CHECKING:
    from tools.metrics.prometheus.indexes import CardIndex


def spread(answer: Vector, cards: CardIndex) -> tuple[Vector, list[dict[str, str]]]:
    """`answer` with each node series that stands for its node's cards made one series per
    card, and the node series that could not be (their labels)."""
    counts = answer.column(CARDS)
    if counts.count(None) == len(counts):
        return answer, []
    series: Series = []
    unplaced: list[dict[str, str]] = []
    for labels, value, count in zip(answer.labels, answer.values, counts, strict=True):
        if count is None:
            series.append((labels, value))
            continue
        uuids = cards.node_cards(labels)
        if uuids is None or str(len(uuids)) != count:
            unplaced.append(labels)
            continue
        stamp = labels.get(STAMP)
        own = {} if stamp is None else {STAMP: stamp}
        series.extend(({"UUID": uuid, **own}, value) for uuid in uuids)
    return Vector(answer.evaluated_at, series), unplaced
