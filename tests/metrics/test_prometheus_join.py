"""The join on answers shaped as Prometheus gives them: dated by their timestamp series in any
order, and identical readings one object."""

from __future__ import annotations

from datetime import datetime

import pytest

from policies.activity import node_card_readings
from tests.metrics.alike import NOW, TARGET, read_alike
from tests.metrics.cluster import bare, per_node_answer, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.fields import FieldReadings, Shared
from tools.metrics.prometheus.indexes import CardIndex, WorkloadIndex
from tools.metrics.prometheus.join import SampleTimes, _at_once, _each, collect
from tools.metrics.prometheus.queries import PART, STAMP, resolve
from tools.metrics.prometheus.totals import Totals
from tools.metrics.prometheus.vector import Vector

GPU = "GPU-gpu-a-0"


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
        got: dict[int, tuple[float | None, datetime | None]] = {}
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
    for name, series in (("ttft_p90", quantile), ("gpu_util", util)):
        read_alike(families[name], series, cards, workloads)
    fast = read_alike(families["waiting"], waiting, cards, workloads)
    assert (fast.values, fast.ages, fast.unmatched) == ({"chat": 7.0}, {"chat": 9.0}, 1)


def test_answers_of_every_shape_read_alike_whole_and_series_by_series() -> None:
    """Two scrape targets, series renamed by Prometheus (`exported_pod`), one without a pod (by
    its model), one marked as host memory, several series of one card, a stale sample, series
    of no card: the whole-answer reading gives what the series-by-series one does."""
    state = bare(truth())
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    families = {f.name: f for f in resolve(PrometheusSettings())}
    other = {"instance": "10.0.0.2:9400", "job": "dcgm"}

    def card(uuid: str, raw: float, **more: str) -> tuple[dict[str, str], float]:
        return {"UUID": uuid, "gpu": "0", **TARGET, **more, PART: "v"}, raw

    util = [_stamp(NOW - 5), ({**other, PART: "t"}, NOW - 400)]
    util += [card("GPU-gpu-a-0", 97.0), card("GPU-gpu-a-0", 99.0, pod="chat-0")]
    util += [card("GPU-gpu-b-0", 50.0, **other), card("GPU-nowhere", 1.0)]
    util += [card("GPU-gpu-a-1", 2.0**30, memory_source="host")]

    def engine(raw: float, **labels: str) -> tuple[dict[str, str], float]:
        return {**TARGET, **labels, PART: "v"}, raw

    waiting = [_stamp(NOW - 2), ({**other, PART: "t"}, NOW - 7)]
    waiting += [
        engine(4.0, exported_pod="chat-7d9f8c6b5-x2x9z", exported_namespace="default"),
        engine(2.0, pod="chat-1", namespace="default"),
        ({**engine(5.0, model_name="qwen-coder")[0], **other}, 5.0),
        engine(9.0, model_name="no-such-model"),
        engine(float("nan"), pod="code-0", namespace="default"),
    ]
    got = read_alike(families["gpu_util"], util, cards, workloads)
    assert got.values["GPU-gpu-a-0"] == 99.0 and got.ages["GPU-gpu-b-0"] == 400.0
    # Host memory marks a memory reading only (`steward gpus --serve` sets it on those).
    assert (got.unmatched, got.marked) == (1, set())
    memory = read_alike(families["fb_used"], util, cards, workloads)
    assert (memory.unmatched, memory.marked) == (1, {"GPU-gpu-a-1"})
    got = read_alike(families["waiting"], waiting, cards, workloads)
    assert got.values == {"chat": 6.0, "code": 5.0} and got.ages == {"chat": 2.0, "code": 7.0}


def test_an_answer_with_a_timestamp_among_the_values_is_read_series_by_series() -> None:
    state = bare(truth())
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    family = {f.name: f for f in resolve(PrometheusSettings())}["gpu_util"]
    other = {"instance": "10.0.0.2:9400", "job": "dcgm"}
    later = ({"UUID": "GPU-gpu-b-0", **other, PART: "v"}, 50.0)
    series = [_stamp(NOW - 5), _card("GPU-gpu-a-0", 97.0), ({**other, PART: "t"}, NOW - 9), later]
    answer = Vector(NOW, series)
    assert _at_once(family, answer, cards, workloads, SampleTimes()) is None
    got = collect(family, answer, cards, workloads)
    assert got == _each(family, answer, cards, workloads)
    assert got.ages == {"GPU-gpu-a-0": 5.0, "GPU-gpu-b-0": 9.0}


def test_totals_made_in_one_batch_are_those_made_card_by_card() -> None:
    """A card's total memory (used + free), made for all cards at once when every used reading
    is fresh and every free value there, is what the card-by-card path makes; with a free value
    missing the batch declines and the card-by-card path says why."""
    state = bare(truth())
    uuids = [gpu.uuid for node in state.nodes for gpu in node.gpus]

    def memory(raw: float, uuid: str) -> tuple[dict[str, str], float]:
        return {"UUID": uuid, **TARGET, PART: "v"}, raw

    used = [_stamp(NOW - 5), *(memory(1000.0 + i, u) for i, u in enumerate(uuids))]
    free = [_stamp(NOW - 5), *(memory(9000.0 - 2 * i, u) for i, u in enumerate(uuids))]
    for frees in (free, free[:-1]):
        settings = PrometheusSettings(url="http://127.0.0.1:1", queries={"power": ""})
        source = PrometheusSource(settings)
        try:
            tick = source.fields(
                state, {"fb_used": Vector(NOW, used), "fb_free": Vector(NOW, frees)}
            )
            merged = source.observation(state, tick)
        finally:
            source.close()
        used_readings, free_readings = (
            tick.fields["memory_used_bytes"],
            tick.fields["memory_free_bytes"],
        )
        totals = Totals(free_readings, Shared())
        by_card = totals.every([used_readings.get(u) for u in uuids], uuids)
        batch = totals.batch(used_readings, uuids)
        assert batch == (by_card if frees is free else None)
        got = [gpu.memory_total_bytes for node in merged.nodes for gpu in node.gpus]
        assert got == by_card
    assert by_card[-1].status == "missing" and "fb_free" in by_card[-1].source


def test_readings_of_an_exporter_per_node_are_those_made_card_by_card() -> None:
    """A DCGM exporter per node: each node's series carry its own sample time (the default
    queries' `steward_t`). The readings, made in one batch, and the totals, made in one batch,
    are what the card-by-card paths make; every card of a node has its node's time."""
    state = bare(truth())
    families = {f.name: f for f in resolve(PrometheusSettings())}

    def answer(raw: float) -> list[tuple[dict[str, str], float]]:
        return per_node_answer(state, raw, NOW)

    answers = {"gpu_util": answer(10.0), "fb_used": answer(1000.0), "fb_free": answer(9000.0)}
    for name, series in answers.items():  # dated alike whole and series by series
        read_alike(families[name], series, CardIndex(state), WorkloadIndex())
    source = PrometheusSource(PrometheusSettings(url="http://127.0.0.1:1", queries={"power": ""}))
    try:
        tick = source.fields(state, {k: Vector(NOW, v) for k, v in answers.items()})
        merged = source.observation(state, tick)
    finally:
        source.close()
    used = tick.fields["memory_used_bytes"]
    assert used.fresh and used.uniform is None  # the batch of many sample times
    uuids = [gpu.uuid for node in state.nodes for gpu in node.gpus]
    bound = source.settings.staleness_s
    assert used.readings is not None
    one_by_one = FieldReadings(used.default, now=state.observed_at, source=used.source)
    one_by_one.times = used.times
    one_by_one._make_each(used.readings, bound, Shared())
    assert [used.get(u) for u in uuids] == [one_by_one.get(u) for u in uuids]
    totals = Totals(tick.fields["memory_free_bytes"], Shared())
    assert totals.batch(used, uuids) == totals.every([used.get(u) for u in uuids], uuids)
    assert len(merged.nodes) > 1
    for i, node in enumerate(merged.nodes):
        times = {g.utilization.observed_at for g in node.gpus}
        times |= {g.memory_total_bytes.observed_at for g in node.gpus}
        assert len(times) == 1
        (at,) = times
        assert at is not None
        assert (state.observed_at - at).total_seconds() == 5 + i
        assert all(g.utilization.status == "fresh" for g in node.gpus)


def _dated(uuid: str, value: float) -> tuple[dict[str, str], float]:
    """A default query's series: dated by its own `steward_t`."""
    return {"UUID": uuid, **TARGET, STAMP: repr(NOW - 5)}, value


def _every_card(value: float) -> list[tuple[dict[str, str], float]]:
    """A default query's answer with every card once: read as a column."""
    state = bare(truth())
    cards = [g.uuid for n in state.nodes for g in n.gpus if g.uuid != "GPU-gpu-b-0"]
    return [_dated("GPU-gpu-b-0", 40.0), *(_dated(uuid, value) for uuid in cards)]


@pytest.mark.parametrize(
    "both",
    [
        [_stamp(NOW - 5), _card("GPU-gpu-a-0", 97.0), _card("GPU-gpu-b-0", 40.0)],
        _every_card(97.0),
    ],
    ids=["by-keys", "column"],
)
def test_a_series_gone_since_the_last_tick_leaves_its_last_reading_stale(
    both: list[tuple[dict[str, str], float]],
) -> None:
    """Gone for two ticks, the card keeps its last value, stale with the reason; back, fresh.
    (Read by keys throughout, or first as a column — every card once — then by keys.)"""
    one = [s for s in both if s[0].get("UUID") != "GPU-gpu-b-0"]
    source = _source()
    states = []
    try:
        for series in (both, one, one, both):
            state = source.merge(bare(truth()), {"gpu_util": Vector(NOW, series)})
            states.append(state.nodes[1].gpus[0].utilization)
    finally:
        source.close()
    first, gone, still, back = states
    assert first.status == back.status == "fresh" and back.value == 40.0
    for reading in (gone, still):
        assert (reading.status, reading.value, reading.observed_at) == (
            "stale",
            40.0,
            first.observed_at,
        )
        assert reading.source == "prometheus:gpu_util: no series since its last sample"


def test_a_target_without_a_timestamp_series_is_not_given_another_targets_age() -> None:
    """Found in review: one sample time among the values plus a target Prometheus gave no
    timestamp series for made two ages, which the one-age shortcut took for one sample time."""
    state = bare(truth())
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    family = {f.name: f for f in resolve(PrometheusSettings())}["gpu_util"]
    undated = ({"UUID": "GPU-gpu-b-0", "instance": "10.0.0.2:9400", "job": "dcgm", PART: "v"}, 50.0)
    for series in (
        [_stamp(NOW - 400), _card("GPU-gpu-a-0", 97.0), undated],
        [_stamp(NOW - 400), undated, _card("GPU-gpu-a-0", 97.0)],
    ):
        got = read_alike(family, series, cards, workloads)
        assert got.ages == {"GPU-gpu-a-0": 400.0, "GPU-gpu-b-0": 0.0}


def test_each_merge_carries_its_own_readings_and_their_times() -> None:
    """Two ticks whose readings differ in value and in age: each observation holds its own."""
    state = bare(truth())
    source = _source()
    try:
        ticks = [
            source.merge(state, {"gpu_util": Vector(NOW, [_stamp(NOW - age), _card(GPU, util)])})
            for age, util in ((5, 97.0), (40, 12.0))
        ]
    finally:
        source.close()
    first, second = (tick.nodes[0] for tick in ticks)
    _, first_at = node_card_readings(first)
    _, second_at = node_card_readings(second)
    assert first_at is not None and second_at is not None
    assert (first_at - second_at).total_seconds() == 35
    assert (first.gpus[0].utilization.value, second.gpus[0].utilization.value) == (97.0, 12.0)
