"""The default queries' answers, each value series dated by its own `steward_t` label: read
whole as series by series, and one scrape one instant in every family."""

from __future__ import annotations

from tests.metrics.alike import NOW, TARGET, read_alike
from tests.metrics.cluster import bare, per_node_answer, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.indexes import CardIndex, WorkloadIndex
from tools.metrics.prometheus.join import SampleTimes, _at_once, collect
from tools.metrics.prometheus.queries import STAMP, resolve
from tools.metrics.prometheus.vector import Vector


def test_answers_dated_in_labels_read_alike_whole_and_series_by_series() -> None:
    """The default queries' answer: every value series carries its own sample time
    (`steward_t`), no timestamp series; two targets, several series of one card and of one
    workload, a card by its node and index, host memory, a NaN, series of no card."""
    state = bare(truth())
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    families = {f.name: f for f in resolve(PrometheusSettings())}
    old = {**TARGET, STAMP: repr(NOW - 400)}
    new = {"instance": "10.0.0.2:9400", "job": "dcgm", STAMP: repr(NOW - 5)}

    def card(uuid: str, raw: float, **more: str) -> tuple[dict[str, str], float]:
        return {"UUID": uuid, "gpu": "0", **new, **more}, raw

    util = [card("GPU-gpu-a-0", 97.0), card("GPU-gpu-a-0", 99.0, **old)]
    util += [card("GPU-gpu-b-0", 50.0), card("GPU-nowhere", 1.0)]
    util += [({"Hostname": "gpu-b", "gpu": "1", **new}, 12.0)]
    util += [card("GPU-gpu-a-1", 2.0**30, memory_source="host")]
    got = read_alike(families["gpu_util"], util, cards, workloads)
    assert got.values["GPU-gpu-a-0"] == 99.0 and got.ages["GPU-gpu-a-0"] == 400.0
    assert got.values["GPU-gpu-b-1"] == 12.0 and got.ages["GPU-gpu-b-0"] == 5.0
    assert (got.unmatched, got.marked) == (1, set())
    memory = read_alike(families["fb_free"], util, cards, workloads)
    assert (memory.unmatched, memory.marked) == (1, {"GPU-gpu-a-1"})

    def engine(raw: float, at: dict[str, str], **labels: str) -> tuple[dict[str, str], float]:
        return {**at, **labels}, raw

    waiting = [
        engine(4.0, new, exported_pod="chat-7d9f8c6b5-x2x9z", exported_namespace="default"),
        engine(2.0, old, pod="chat-1", namespace="default"),
        engine(5.0, new, model_name="qwen-coder"),
        engine(float("nan"), new, pod="code-0", namespace="default"),
    ]
    got = read_alike(families["waiting"], waiting, cards, workloads)
    assert got.values == {"chat": 6.0, "code": 5.0} and got.ages == {"chat": 400.0, "code": 5.0}
    one = read_alike(families["gpu_util"], [card("GPU-gpu-a-0", 97.0)], cards, workloads)
    assert one.ages == {"GPU-gpu-a-0": 5.0}


def test_a_series_without_its_time_among_dated_ones_is_read_series_by_series() -> None:
    state = bare(truth())
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    family = {f.name: f for f in resolve(PrometheusSettings())}["gpu_util"]
    dated = ({"UUID": "GPU-gpu-a-0", **TARGET, STAMP: repr(NOW - 5)}, 97.0)
    answer = Vector(NOW, [dated, ({"UUID": "GPU-gpu-b-0", **TARGET}, 50.0)])
    assert _at_once(family, answer, cards, workloads, SampleTimes()) is None
    got = collect(family, answer, cards, workloads)
    assert got.ages == {"GPU-gpu-a-0": 5.0, "GPU-gpu-b-0": 0.0}


def test_a_sample_has_one_age_whichever_familys_query_was_evaluated_later() -> None:
    """Each family's query is evaluated at Prometheus's own now, seconds apart on a busy server:
    ages are measured from the tick's latest evaluation, so one scrape's readings carry one
    instant in every family (and are worked out once)."""
    state = bare(truth())
    series = per_node_answer(state, 10.0, NOW)
    answers = {"gpu_util": Vector(NOW, series), "power": Vector(NOW + 3, series)}
    source = PrometheusSource(PrometheusSettings(url="http://127.0.0.1:1", read_power=True))
    try:
        merged = source.merge(state, answers)
        alone = source.merge(state, {"gpu_util": Vector(NOW + 3, series)})
    finally:
        source.close()
    for i, node in enumerate(merged.nodes):
        for gpu in node.gpus:
            at = gpu.utilization.observed_at
            assert at is not None and at == gpu.power_w.observed_at
            assert (state.observed_at - at).total_seconds() == 8 + i  # from NOW + 3
    assert [g.utilization for n in alone.nodes for g in n.gpus] == [
        g.utilization for n in merged.nodes for g in n.gpus
    ]
