"""A card family's answer with one series per card, read down the card order: the same readings
as by keys, and every other shape read by keys."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.metrics.cluster import bare, per_node_answer, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.client import vector_from
from tools.metrics.prometheus.indexes import CardIndex, WorkloadIndex
from tools.metrics.prometheus.join import SampleTimes, _at_once, _each
from tools.metrics.prometheus.queries import STAMP, UNIFIED_LABEL, resolve
from tools.metrics.prometheus.readings import Readings
from tools.metrics.prometheus.vector import Vector
from tools.model import ClusterState

NOW = 1_000_000.0
Series = list[tuple[dict[str, str], float]]


def _answer(state: ClusterState, base: float) -> Series:
    return per_node_answer(state, base, NOW)


def _read(state: ClusterState, series: Series) -> tuple[Readings | None, Readings]:
    """The whole-answer reading and the series-by-series one."""
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    resolved = {f.name: f for f in resolve(PrometheusSettings())}["fb_used"]
    answer = Vector(NOW, series)
    whole = _at_once(resolved, answer, cards, workloads, SampleTimes())
    # The same answer as Prometheus would send it, decoded.
    decoded = vector_from(answer.text, "q", NOW, resolved.reads)
    assert _at_once(resolved, decoded, CardIndex(state), workloads, SampleTimes()) == whole
    return whole, _each(resolved, answer, cards, workloads)


def test_one_series_per_card_is_read_as_a_column_that_reads_as_by_keys() -> None:
    state = bare(truth())
    whole, each = _read(state, _answer(state, 1000.0))
    assert whole is not None and whole.column is not None
    assert whole == each
    assert whole.column.order == [g.uuid for n in state.nodes for g in n.gpus]


def test_an_answer_in_another_order_each_tick_reads_as_by_keys() -> None:
    """Series in the card order, then reversed, then in the card order again, joined by one
    index as tick after tick: what it remembered of the last answer's order never misplaces a
    card."""
    state = bare(truth())
    cards, workloads = CardIndex(state), WorkloadIndex()
    workloads.refresh(state)
    resolved = {f.name: f for f in resolve(PrometheusSettings())}["gpu_util"]
    for base, flip in ((1000.0, False), (2000.0, True), (3000.0, False)):
        series = _answer(state, base)
        answer = Vector(NOW, series[::-1] if flip else series)
        cards.refresh(state)
        whole = _at_once(resolved, answer, cards, workloads, SampleTimes())
        assert whole is not None and whole.column is not None
        assert whole == _each(resolved, answer, CardIndex(state), workloads)


def _missing(series: Series) -> Series:
    return series[1:]


def test_cards_without_a_series_are_holes_in_the_column() -> None:
    state = bare(truth())
    whole, each = _read(state, _missing(_answer(state, 1000.0)))
    assert whole is not None and whole.column is not None and whole.column.holes == (0,)
    assert whole == each


def test_an_exporter_gone_quiet_reads_down_the_column_as_by_keys_tick_after_tick() -> None:
    """A node's exporter stops answering for two ticks, then answers again: its cards are holes
    in the columns (stale with their last reading, their totals too), and every card reads as
    the same answers read by keys (one series of no card added) say, tick after tick."""
    state = bare(truth())
    families = ("gpu_util", "fb_used", "fb_free", "power")
    quiet = {g.uuid for g in state.nodes[0].gpus}
    stranger = ({"UUID": "GPU-nowhere", "instance": "x", "job": "dcgm", STAMP: repr(NOW)}, 1.0)
    settings = PrometheusSettings(url="http://127.0.0.1:1", read_power=True)
    sources = [PrometheusSource(settings) for _ in range(2)]
    try:
        for tick, gone in enumerate((False, True, True, False)):
            full = {name: _answer(state, 100.0 * (k + 1) + tick) for k, name in enumerate(families)}
            if gone:
                full = {k: [s for s in v if s[0]["UUID"] not in quiet] for k, v in full.items()}
            merged = [
                source.merge(state, {k: Vector(NOW, [*v, *extra]) for k, v in full.items()})
                for source, extra in zip(sources, ([], [stranger]), strict=True)
            ]
            used = sources[0]._last["fb_used"].readings
            assert used is not None and used.column is not None
            assert used.column.holes == (tuple(range(len(quiet))) if gone else ())
            columns, keys = ([g for n in m.nodes for g in n.gpus] for m in merged)
            assert columns == keys
            held = [g for g in columns if g.uuid in quiet]
            if gone:
                assert all(g.utilization.status == "stale" for g in held)
                assert all(g.memory_total_bytes.status == "stale" for g in held)
            read = [g for g in columns if not (gone and g.uuid in quiet)]
            assert all(g.utilization.status == "fresh" for g in read)
    finally:
        for source in sources:
            source.close()


def _twice(series: Series) -> Series:
    return [series[0], *series[:-1]]  # the first card twice, the last one not at all


def _marked(series: Series) -> Series:
    labels, raw = series[-1]
    return [*series[:-1], ({**labels, UNIFIED_LABEL: "host"}, raw)]


def _nan(series: Series) -> Series:
    labels, _ = series[0]
    return [(labels, float("nan")), *series[1:]]


def _stranger(series: Series) -> Series:
    labels, raw = series[0]
    return [({**labels, "UUID": "GPU-nowhere"}, raw), *series[1:]]


def _by_slot(series: Series) -> Series:
    labels, raw = series[0]
    return [({k: v for k, v in labels.items() if k != "UUID"}, raw), *series[1:]]


@pytest.mark.parametrize("shape", [_twice, _marked, _nan, _stranger, _by_slot])
def test_an_answer_a_column_cannot_hold_is_read_by_keys(shape: Callable[[Series], Series]) -> None:
    state = bare(truth())
    whole, each = _read(state, shape(_answer(state, 1000.0)))
    assert whole is not None and whole.column is None
    assert whole == each


def test_a_merge_read_down_columns_is_the_merge_read_by_keys() -> None:
    """Every card's readings and total memory, and each node's time, alike both ways: the
    column path against the same answer with one series of no card added (read by keys)."""
    state = bare(truth())
    families = ("gpu_util", "fb_used", "fb_free", "power")
    full = {name: _answer(state, 100.0 * (k + 1)) for k, name in enumerate(families)}
    stranger = ({"UUID": "GPU-nowhere", "instance": "x", "job": "dcgm", STAMP: repr(NOW)}, 1.0)
    merged = []
    for extra in ([], [stranger]):
        source = PrometheusSource(PrometheusSettings(url="http://127.0.0.1:1", read_power=True))
        try:
            answers = {k: Vector(NOW, [*v, *extra]) for k, v in full.items()}
            merged.append(source.merge(state, answers))
            used = source._last["fb_used"].readings
            assert used is not None and (used.column is None) == bool(extra)
        finally:
            source.close()
    columns, keys = ([g for n in m.nodes for g in n.gpus] for m in merged)
    assert columns == keys
    assert all(g.memory_total_bytes.status == "fresh" for g in columns)
    assert len({g.utilization.observed_at for g in columns}) == len(state.nodes)
