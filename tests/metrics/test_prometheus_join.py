"""The join on answers shaped as Prometheus gives them: dated by their timestamp series in any
order, and identical readings one object."""

from __future__ import annotations

from tests.metrics.cluster import bare, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.client import Vector
from tools.metrics.prometheus.join import CardIndex, WorkloadIndex, _at_once, _each
from tools.metrics.prometheus.queries import PART, resolve

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


def test_the_whole_answer_reading_agrees_with_the_series_by_series_one() -> None:
    """Replicas summed, a NaN quantile, an unknown pod, a card named by its node and index."""
    state = bare(truth())
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    families = {f.name: f for f in resolve(PrometheusSettings())}

    def pod(name: str, raw: float, part: str = "v") -> tuple[dict[str, str], float]:
        return {"pod": name, "namespace": "default", "model_name": "m", PART: part}, raw

    waiting = [pod("chat-0", NOW - 3, "t"), pod("chat-1", NOW - 9, "t")]
    waiting += [pod("chat-0", 4.0), pod("chat-1", 3.0), pod("nobody-0", 1.0)]
    quantile = [pod("chat-0", NOW - 3, "t"), pod("chat-0", float("nan"))]
    by_slot = {"Hostname": "gpu-b", "gpu": "1", **TARGET, PART: "v"}
    util = [_stamp(NOW - 5), _card("GPU-gpu-a-0", 97.0), (by_slot, 12.0)]
    for name, series in (("waiting", waiting), ("ttft_p90", quantile), ("gpu_util", util)):
        family = families[name]
        fast = _at_once(family, Vector(NOW, series), cards, workloads)
        assert fast is not None
        assert fast == _each(family, Vector(NOW, series), cards, workloads)
    fast = _at_once(families["waiting"], Vector(NOW, waiting), cards, workloads)
    assert fast is not None
    assert (fast.values, fast.ages, fast.unmatched) == ({"chat": 7.0}, {"chat": 9.0}, 1)
