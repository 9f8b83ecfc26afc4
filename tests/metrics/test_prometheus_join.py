"""The join on answers shaped as Prometheus gives them: dated by their timestamp series in any
order, and identical readings one object."""

from __future__ import annotations

from tests.metrics.cluster import bare, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.client import Vector
from tools.metrics.prometheus.queries import PART

NOW = 1_000_000.0
TARGET = {"instance": "10.0.0.1:9400", "job": "dcgm"}


def _card(uuid: str, value: float) -> tuple[dict[str, str], float]:
    return {"__name__": "DCGM_FI_DEV_GPU_UTIL", "UUID": uuid, **TARGET, PART: "v"}, value


def _stamp(at: float) -> tuple[dict[str, str], float]:
    return {**TARGET, PART: "t"}, at


def _source() -> PrometheusSource:
    settings = PrometheusSettings(url="http://127.0.0.1:1", queries={"fb_used": "", "power": ""})
    return PrometheusSource(settings)


def test_values_before_their_timestamps_are_dated_all_the_same() -> None:
    series = [_card("GPU-gpu-a-0", 97.0), _card("GPU-gpu-b-0", 97.0), _stamp(NOW - 30)]
    source = _source()
    try:
        got = {}
        for order in (series, series[::-1]):
            state = source.merge(bare(truth()), {"gpu_util": Vector(NOW, order)})
            card = state.nodes[0].gpus[0]
            got[len(got)] = (card.utilization.value, card.utilization.observed_at)
    finally:
        source.close()
    assert got[0] == got[1]
    value, at = got[0]
    assert value == 97.0
    assert at is not None and (bare(truth()).observed_at - at).total_seconds() == 30


def test_cards_that_read_the_same_share_one_reading() -> None:
    series = [_stamp(NOW - 5), _card("GPU-gpu-a-0", 97.0), _card("GPU-gpu-b-0", 97.0)]
    source = _source()
    try:
        state = source.merge(bare(truth()), {"gpu_util": Vector(NOW, series)})
    finally:
        source.close()
    a, b = state.nodes[0].gpus[0].utilization, state.nodes[1].gpus[0].utilization
    assert a is b and a.status == "fresh"
