"""A real Prometheus scraping exporters that speak DCGM's and vLLM's names: the observation
holds the exported values, joined to the right card and workload, dated by their samples."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from lab.bench.prometheus_server import RealPrometheus
from tests.metrics.cluster import GIB, Exporters, bare, truth
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource, check_queries
from tools.metrics.prometheus.client import vector_of
from tools.metrics.prometheus.queries import FAMILY_LIST
from tools.metrics.prometheus.source import Answer
from tools.metrics.prometheus.vector import Vector
from tools.model import ClusterState, Gpu, Workload


def _settings(prometheus: RealPrometheus, **kw: object) -> PrometheusSettings:
    return PrometheusSettings.model_validate(
        {"url": prometheus.url, "window": "5s", "read_power": True, **kw}
    )


def _gpu(state: ClusterState, uuid: str) -> Gpu:
    return next(g for n in state.nodes for g in n.gpus if g.uuid == uuid)


def _workload(state: ClusterState, name: str) -> Workload:
    found = state.workload(name)
    assert found is not None
    return found


@pytest.fixture(scope="module")
def observed(prometheus: RealPrometheus) -> ClusterState:
    source = PrometheusSource(_settings(prometheus))
    try:
        return source.read(bare(truth()))
    finally:
        source.close()


def test_cards_hold_the_dcgm_readings_of_their_own_uuid(observed: ClusterState) -> None:
    card = _gpu(observed, "GPU-gpu-a-0")
    assert card.utilization.value == 97.0
    assert card.utilization.status == "fresh"
    assert card.utilization.source == "prometheus:gpu_util"
    assert card.power_w.value == 650.0
    assert card.memory_used_bytes.value == 70.5 * GIB
    assert card.memory_total_bytes.value == 141 * GIB
    other = _gpu(observed, "GPU-gpu-b-0")
    assert (other.utilization.value, other.power_w.value) == (88.0, 610.0)


def test_a_gb10_card_holds_the_host_memory_it_was_exported_with(observed: ClusterState) -> None:
    """Through the DCGM names a GB10 lacks today: the host's memory, marked so by the exporter
    (`memory_source`), arrives fresh and says where it comes from."""
    card = _gpu(observed, "GPU-gx10-0")
    used, total = card.memory_used_bytes, card.memory_total_bytes
    assert (used.status, total.status) == ("fresh", "fresh")
    assert used.value == 28 * GIB and total.value == 128 * GIB
    assert used.source == "prometheus:fb_used (unified memory: host memory)"
    assert card.utilization.value == 12.0


def test_a_card_without_a_series_is_missing_and_says_why(observed: ClusterState) -> None:
    card = _gpu(observed, "GPU-gpu-b-1")
    assert card.utilization.status == "missing"
    assert card.utilization.value is None
    assert card.utilization.source == "prometheus:gpu_util: no series"
    assert card.power_w.value == 300.0  # the card's other readings are there


def test_engine_series_add_up_per_workload_across_its_pods(observed: ClusterState) -> None:
    chat = _workload(observed, "chat")
    assert chat.queue_depth.value == 7  # 4 + 3 waiting on its two pods
    assert chat.requests_running.value == 3
    assert chat.kv_cache_usage.value == pytest.approx(0.42)
    assert chat.ttft_s.value is not None and 0.25 < chat.ttft_s.value <= 0.5  # its bucket
    assert chat.queue_wait_s.value is not None and 1.0 < chat.queue_wait_s.value <= 2.5
    assert chat.tokens_per_s.value == pytest.approx(100.0, rel=0.25)


def test_both_spellings_of_the_vllm_names_are_read(observed: ClusterState) -> None:
    code = _workload(observed, "code")
    assert (code.queue_depth.value, code.requests_running.value) == (2, 1)
    assert code.queue_depth.source == "prometheus:waiting"


def test_readings_are_dated_by_their_samples(observed: ClusterState) -> None:
    card = _gpu(observed, "GPU-gpu-a-0")
    assert card.utilization.observed_at is not None
    age = observed.observed_at - card.utilization.observed_at
    # Scraped every second: the newest sample is at most a couple of seconds old.
    assert timedelta(0) <= age <= timedelta(seconds=3)


def test_a_workload_no_engine_reports_is_missing(observed: ClusterState) -> None:
    render = _workload(observed, "render")
    assert render.queue_depth.status == "missing"
    assert render.queue_depth.source == "prometheus:waiting: no series"


def test_a_refused_query_makes_exactly_its_readings_missing(prometheus: RealPrometheus) -> None:
    settings = _settings(prometheus, queries={"power": "DCGM_FI_DEV_POWER_USAGE{"})
    source = PrometheusSource(settings)
    try:
        state = source.read(bare(truth()))
    finally:
        source.close()
    card = _gpu(state, "GPU-gpu-a-0")
    assert card.power_w.status == "missing"
    assert card.power_w.source.startswith("prometheus:power: query refused: bad_data")
    assert card.utilization.value == 97.0
    assert source.last_tick is not None and set(source.last_tick.failed) == {"power"}


def test_an_invalid_override_is_refused_with_its_key_and_prometheus_error(
    prometheus: RealPrometheus,
) -> None:
    settings = _settings(prometheus, queries={"waiting": "sum(vllm:num_requests_waiting"})
    problems = check_queries(settings)
    assert len(problems) == 1, problems
    assert problems[0].startswith("metrics.prometheus.queries.waiting: ")
    assert "parse error" in problems[0]
    assert check_queries(_settings(prometheus)) == []


def test_a_real_prometheus_answer_reads_as_its_json(prometheus: RealPrometheus) -> None:
    """Each answer the source reads gives what `json` decoding of its text gives."""
    source = PrometheusSource(_settings(prometheus))
    try:
        answers = source.ask()
    finally:
        source.close()
    vectors = [a for a in answers.values() if isinstance(a, Vector)]
    assert len(vectors) == len(answers) and sum(map(len, vectors)) > 0
    for answer in vectors:
        decoded = vector_of(json.loads(answer.text), "q", answer.evaluated_at)
        assert answer.evaluated_at == decoded.evaluated_at
        assert repr(answer.series) == repr(decoded.series)  # NaN != NaN; their reprs agree


def test_the_default_queries_read_what_the_same_queries_as_overrides_read(
    prometheus: RealPrometheus,
) -> None:
    """The default queries come back dated in a label, with only the join's labels; the same
    queries as overrides come back as value and timestamp series. Every reading is the same —
    values, times, fresh or stale — just after a scrape and 200 s after the samples stopped (a
    gauge stale by its own samples' age, a rate without samples in its window gone)."""
    overrides = _settings(
        prometheus,
        queries={f.name: f.query for f in FAMILY_LIST},
        timestamps={f.name: f.timestamp for f in FAMILY_LIST},
    )
    sources = [PrometheusSource(_settings(prometheus)), PrometheusSource(overrides)]
    assert [all(f.default for f in s.families) for s in sources] == [True, False]
    at = time.time() - 2  # every target scraped since, at 1 s intervals
    try:
        for when, label in ((at, "now"), (at + 200, "later")):
            answers = _same_samples(sources, when)
            read = [s.merge(bare(truth()), a) for s, a in zip(sources, answers, strict=True)]
            assert read[0] == read[1], label
    finally:
        for source in sources:
            source.close()
    card = _gpu(read[0], "GPU-gpu-a-0")
    assert card.utilization.status == "stale" and card.utilization.value == 97.0
    assert "old (bound 90 s)" in card.utilization.source


def _same_samples(sources: list[PrometheusSource], when: float) -> list[dict[str, Answer]]:
    """Each source's answers at `when`, asked of the same stored samples. Evaluated at a time
    still to come, a query also reads samples scraped while the sources ask one after the
    other: the first is asked again after the others, and all are asked anew until its two
    answers agree, so that no scrape landed in between."""
    for _ in range(20):
        answers = [s.ask(when) for s in sources]
        if repr(sources[0].ask(when)) == repr(answers[0]):  # NaN != NaN; their reprs agree
            return answers
    raise AssertionError("every attempt had a scrape land between the sources' queries")


def test_engine_series_of_a_pod_prometheus_renamed_join_to_its_workload(
    exporters: Exporters, tmp_path: Path
) -> None:
    """Scraped through a target that has a `pod` and `namespace` of its own (a gateway that
    reports per pod), an engine's labels become `exported_pod` and `exported_namespace`: the
    default queries move them back, and every reading of `chat` is what its pods export."""
    chat = f"127.0.0.1:{exporters.servers[1].port}"  # the vLLM engine of chat's two pods
    job = {
        "job_name": "gateway",
        "static_configs": [
            {"targets": [chat], "labels": {"pod": "gateway-0", "namespace": "gateway"}}
        ],
    }
    with RealPrometheus(tmp_path, [], jobs=[job]) as prometheus:
        prometheus.wait_for_scrapes(7)  # more than the 5 s rate window
        renamed = httpx.get(
            f"{prometheus.url}/api/v1/query",
            params={"query": "vllm:num_requests_waiting"},
            timeout=5,
        ).json()["data"]["result"]
        assert {r["metric"]["exported_pod"] for r in renamed} == {"chat-0", "chat-1"}
        assert {r["metric"]["pod"] for r in renamed} == {"gateway-0"}
        source = PrometheusSource(_settings(prometheus))
        try:
            observed = source.read(bare(truth()))
            report = source.last_tick
        finally:
            source.close()
    assert report is not None and not report.failed, report
    got = _workload(observed, "chat")
    assert (got.queue_depth.value, got.requests_running.value) == (7, 3)
    assert got.queue_depth.status == "fresh"
    assert got.ttft_s.value is not None and 0.25 < got.ttft_s.value <= 0.5
    assert got.tokens_per_s.value == pytest.approx(100.0, rel=0.25)
    assert got.tokens_per_s.status == "fresh"
