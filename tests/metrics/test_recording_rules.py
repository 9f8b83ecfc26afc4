"""Steward's recording rules, loaded by a real Prometheus: the source reads the series they record
(cards with only the labels the join reads, engines joined to their workload and aggregated),
and they give what the raw series give; without the rules the source reads the raw series."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
import yaml

from lab.bench.prometheus_server import RealPrometheus
from tests.metrics.cluster import GIB, Exporters, bare, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.queries import RECORDED, RULES_FILE
from tools.model import ClusterState

MANIFEST = Path(__file__).parents[2] / "docker" / "prometheus-rule.yaml"
CARD_FIELDS = ("utilization", "memory_used_bytes", "memory_total_bytes", "power_w")
WORKLOAD_FIELDS = ("queue_depth", "requests_running", "kv_cache_usage")
"""Readings the rules and the raw queries work out the same way: gauges (a quantile of the
buckets summed per workload is not the slowest pod's, a rate's window is the rules' own)."""


@pytest.fixture(scope="module")
def ruled(
    exporters: Exporters, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealPrometheus]:
    workdir: Path = tmp_path_factory.mktemp("prometheus-rules")
    with RealPrometheus(workdir, exporters.targets, rules=(RULES_FILE,)) as server:
        server.wait_for_scrapes(7)  # more than the 5 s window of the raw queries
        server.wait_for_rules()
        yield server


def _read(
    prometheus: RealPrometheus, rules: Literal["recorded", "raw"]
) -> tuple[ClusterState, list[str]]:
    settings = PrometheusSettings(url=prometheus.url, window="5s", rules=rules)
    source = PrometheusSource(settings)
    try:
        state = source.read(bare(truth()))
        assert source.last_tick is not None
        return state, source.last_tick.from_rules
    finally:
        source.close()


def test_the_source_reads_the_recorded_series_and_they_read_as_the_raw_ones(
    ruled: RealPrometheus,
) -> None:
    recorded, from_rules = _read(ruled, "recorded")
    raw, none = _read(ruled, "raw")
    assert none == []
    assert from_rules == sorted(RECORDED)  # every family that has rules is answered by them
    for mine, theirs in zip(recorded.nodes, raw.nodes, strict=True):
        for card, other in zip(mine.gpus, theirs.gpus, strict=True):
            for field in CARD_FIELDS:
                a, b = getattr(card, field), getattr(other, field)
                assert (a.value, a.status) == (b.value, b.status), (card.uuid, field)
    for workload, other_workload in zip(recorded.workloads, raw.workloads, strict=True):
        for field in WORKLOAD_FIELDS:
            a, b = getattr(workload, field), getattr(other_workload, field)
            assert a.value == pytest.approx(b.value) and a.status == b.status, (
                workload.name,
                field,
            )
    chat = recorded.workload("chat")
    assert chat is not None and chat.queue_depth.value == 7  # 4 + 3 on its two pods, by the rule
    card = next(g for n in recorded.nodes for g in n.gpus if g.uuid == "GPU-gx10-0")
    assert card.memory_used_bytes.value == 28 * GIB
    assert card.memory_used_bytes.source == "prometheus:fb_used (unified memory: host memory)"


def test_without_the_rules_the_raw_series_are_read(prometheus: RealPrometheus) -> None:
    state, from_rules = _read(prometheus, "recorded")
    assert from_rules == []
    chat = state.workload("chat")
    assert chat is not None and chat.queue_depth.value == 7


def test_the_operator_manifest_holds_the_rules_file_and_every_recorded_series() -> None:
    plain = yaml.safe_load(RULES_FILE.read_text())["groups"]
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert manifest["kind"] == "PrometheusRule"
    assert manifest["spec"]["groups"] == plain
    recorded = {rule["record"] for group in plain for rule in group["rules"]}
    assert {name for pair in RECORDED.values() for name in pair} == recorded
