"""What the join tests share: an answer's time and scrape target, and reading one answer both
ways (whole, and series by series), each of which must give the same readings."""

from __future__ import annotations

from tools.metrics.prometheus.client import vector_from
from tools.metrics.prometheus.indexes import CardIndex, WorkloadIndex
from tools.metrics.prometheus.join import SampleTimes, _at_once, _each
from tools.metrics.prometheus.queries import Resolved
from tools.metrics.prometheus.readings import Readings
from tools.metrics.prometheus.vector import Vector

NOW = 1_000_000.0
TARGET = {"instance": "10.0.0.1:9400", "job": "dcgm"}


def read_alike(
    family: Resolved,
    series: list[tuple[dict[str, str], float]],
    cards: CardIndex,
    workloads: WorkloadIndex,
) -> Readings:
    """The whole-answer reading of `series`, checked against the series-by-series one, and
    against the same answer decoded from the text Prometheus would send."""
    whole = _at_once(family, Vector(NOW, series), cards, workloads, SampleTimes())
    assert whole is not None
    assert whole == _each(family, Vector(NOW, series), cards, workloads)
    decoded = vector_from(Vector(NOW, series).text, "q", NOW, family.reads)
    assert _at_once(family, decoded, cards, workloads, SampleTimes()) == whole
    return whole
