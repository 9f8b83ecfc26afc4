"""A workload served by SGLang, read as a user's Prometheus reads it: the twin exports its engine
under SGLang's own names (`sglang:num_queue_reqs`, `sglang:token_usage`, …), a real Prometheus
scrapes the twin, and the Prometheus source joins those series to that workload — next to a vLLM
one, whose series keep vLLM's names.

The workload is the built-in day plus one served model labelled `steward.dev/engine: sglang` on
the workstation (its TTS left at zero to make room), so nothing else of the day changes.
tests/metrics/test_engines.py checks the names of what the simulator does not read (KV cache).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from lab.bench.prometheus_server import RealPrometheus
from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.sim.demand import PoissonDemand
from lab.sim.extras import ExtraWorkload, Serving
from lab.sim.scenario import Scenario
from lab.twin.engines import ENGINE_LABEL, SGLANG_QUEUE_BUCKETS, SGLANG_TTFT_BUCKETS
from lab.twin.server import Twin
from tests.kubernetes.conftest import settings_for
from tests.kubernetes.test_default_day_prometheus import SCRAPE, ScrapedTwin, twin_jobs
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.model import ClusterState, Workload

pytestmark = pytest.mark.slow  # a real Prometheus scraping the twin through a day
SGLANG_WORKLOAD = "sgl-chat"
SGLANG_NAMES = {  # not sglang:token_usage: the simulator has no KV-cache reading to export
    "sglang:num_queue_reqs",
    "sglang:num_running_reqs",
    "sglang:generation_tokens_total",
    "sglang:time_to_first_token_seconds_bucket",
    "sglang:queue_time_seconds_bucket",
}


def sglang_day() -> Scenario:
    """The built-in day with an SGLang-served chat model on the workstation."""
    day = default_day()
    chat = ExtraWorkload(
        name=SGLANG_WORKLOAD,
        pool="workstation",
        replicas=1,
        model="qwen3-32b",
        memory_gib=36,  # the catalogue's weights and a short context's KV cache
        labels={ENGINE_LABEL: "sglang"},
        serving=Serving(single_stream_tok_s=40, prefill_tok_s=4000, context_length=2048),
    )
    demand = PoissonDemand(
        target=SGLANG_WORKLOAD, rate_per_min=40, input_tokens=800, output_tokens=300
    )
    return day.model_copy(
        update={
            "workloads": (chat,),
            "replicas": {**day.replicas, "tts": 0},
            "demand": (*day.demand, demand),
        }
    )


def _workload(state: ClusterState, name: str) -> Workload:
    """The workload `name`, also when the backend names it `namespace/name`."""
    found = [w for w in state.workloads if w.name.rpartition("/")[2] == name]
    assert len(found) == 1, [w.name for w in state.workloads]
    return found[0]


def _names_of_pods(prometheus: str, prefix: str, at: float) -> set[str]:
    """The metric names Prometheus holds for the pods of a workload."""
    query = f'{{pod=~"{prefix}-.*", job="twin-engines"}}'
    got = httpx.get(f"{prometheus}/api/v1/query", params={"query": query, "time": at}, timeout=5)
    return {s["metric"]["__name__"] for s in got.json()["data"]["result"]}


def test_an_sglang_engine_is_scraped_under_its_names_and_joined_to_its_workload(
    tmp_path: Path,
) -> None:
    with (
        Twin(SimCluster(sglang_day())) as twin,
        RealPrometheus(
            tmp_path,
            [],
            interval=SCRAPE,
            jobs=twin_jobs(f"{twin.host}:{twin.port}"),
            storage={"tsdb": {"out_of_order_time_window": "3650d"}},
            flags=("--query.lookback-delta=10s",),
        ) as prometheus,
    ):
        holder: dict[str, ScrapedTwin] = {}
        cluster = KubernetesCluster(settings_for(twin), now=lambda: holder["w"].now)
        world = holder["w"] = ScrapedTwin(twin, cluster, prometheus.url)
        settings = PrometheusSettings(url=prometheus.url, evaluate_at="observation", window="15s")
        source = PrometheusSource(settings)
        try:
            cluster.start()
            for _ in range(8):  # two minutes of requests: counters and histograms grow
                world.advance(15)
            observed = cluster.observe()
            joined = source.read(observed)
            truth = twin.call(twin.sim.observe)
            at = observed.observed_at.timestamp()
            sglang_names = _names_of_pods(prometheus.url, SGLANG_WORKLOAD, at)
            vllm_names = _names_of_pods(prometheus.url, "beast", at)
            report = source.last_tick
        finally:
            source.close()
            cluster.close()
    assert sglang_names >= SGLANG_NAMES and not any(n.startswith("vllm") for n in sglang_names)
    assert "vllm:num_requests_waiting" in vllm_names
    assert not any(n.startswith("sglang") for n in vllm_names)
    assert report is not None and not report.failed and report.unmatched == 0, report
    got, want = _workload(joined, SGLANG_WORKLOAD), _workload(truth, SGLANG_WORKLOAD)
    for field, family in (("queue_depth", "waiting"), ("requests_running", "running")):
        reading, true = getattr(got, field), getattr(want, field)
        assert reading.status == "fresh" and reading.source == f"prometheus:{family}", reading
        assert reading.value == true.value, (field, reading, true)
    assert want.tokens_per_s.value and got.tokens_per_s.value
    assert abs(got.tokens_per_s.value - want.tokens_per_s.value) <= 0.05 * want.tokens_per_s.value
    # A quantile of one tick's requests, all at the simulator's value: Prometheus interpolates
    # within SGLang's bucket holding it (vLLM's buckets would give another figure).
    for field, family, bounds in (
        ("ttft_s", "ttft_p90", SGLANG_TTFT_BUCKETS),
        ("queue_wait_s", "queue_time_p90", SGLANG_QUEUE_BUCKETS),
    ):
        reading, true = getattr(got, field), getattr(want, field)
        if true.value is None:
            # No figure of the simulator's for this tick; the histograms take one observation
            # per request, so requests finished in the window may still be there.
            assert reading.source in (
                f"prometheus:{family}: no data in the window",
                f"prometheus:{family}",
            ), reading
            assert reading.value is None or reading.value > 0, reading
            continue
        assert reading.status == "fresh" and reading.source == f"prometheus:{family}", reading
        low = max((b for b in bounds if b < true.value), default=0.0)
        high = min(b for b in bounds if b >= true.value)
        assert reading.value is not None and low <= reading.value <= high, (field, reading, true)
    assert got.queue_wait_s.usable  # this tick of the seeded day has requests that queued
