"""The signals engines really export, from the simulator: KV-cache use, TTFT and inter-token
latency p90, prompt tokens and requests finished per second, requests running and waiting (over
the replicas' own queues), and GPU utilization as a duty cycle; and the twin's engine exporter
writes them under vLLM's names."""

from __future__ import annotations

from datetime import timedelta

from lab.sim.backend import SimCluster
from lab.twin.engines import EngineExporter
from tests.sim.conftest import steady


def test_a_loaded_workload_reports_what_vllm_exports() -> None:
    sim = SimCluster.from_scenario(steady("gx10", 30, mode="split", inp=2_000, out=100))
    sim.advance(600)
    seen: dict[str, list[float]] = {}
    for _ in range(12):  # a minute of scrapes: some 5 s windows finish no request
        sim.advance(5)
        w = sim.observe().workload("resident-a")
        assert w is not None
        for name in ("kv_cache_usage", "ttft_s", "itl_s", "prompt_tokens_per_s",
                     "requests_per_s", "requests_running", "queue_depth"):  # fmt: skip
            reading = getattr(w, name)
            if reading.usable and reading.value is not None:
                seen.setdefault(name, []).append(reading.value)
    assert set(seen) == {"kv_cache_usage", "ttft_s", "itl_s", "prompt_tokens_per_s",
                         "requests_per_s", "requests_running", "queue_depth"}  # fmt: skip
    assert all(0.0 <= v <= 1.0 for v in seen["kv_cache_usage"])
    assert max(seen["kv_cache_usage"]) > 0
    assert min(seen["itl_s"]) >= 1 / 20.3 - 1e-9, "no stream beats the single-stream speed"
    assert max(seen["prompt_tokens_per_s"]) > 0
    assert max(seen["requests_per_s"]) > 0


def test_an_overloaded_replica_is_busy_all_the_time() -> None:
    sim = SimCluster.from_scenario(steady("gx10", 60, mode="split", inp=2_000, out=300))
    sim.advance(600)
    # Demand above what one GX10 serves: its card runs a step all the time (a duty cycle, as
    # DCGM counts it), where decoding at a fraction of its peak once read as that fraction.
    node = sim.observe().node("gx10-a")
    assert node is not None
    assert node.gpus[0].utilization.value == 100.0


def test_an_idle_replica_reads_zero_utilization() -> None:
    sim = SimCluster.from_scenario(steady("gx10", 0.5, mode="split", inp=200, out=20))
    sim.advance(600)
    node = sim.observe().node("gx10-a")
    assert node is not None
    util = node.gpus[0].utilization.value
    assert util is not None and util < 5.0, "a request every two minutes keeps it mostly idle"


def test_the_twins_engines_write_the_new_families() -> None:
    sim = SimCluster.from_scenario(steady("gx10", 60, mode="split", inp=2_000, out=300))
    sim.advance(600)
    state = sim.observe()
    exporter = EngineExporter()
    exporter.update(state)
    exporter.update(state.model_copy(update={"observed_at": state.observed_at + timedelta(30)}))
    text = "\n".join(exporter.lines())
    for name in (
        "vllm:request_success_total",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
    ):
        assert f"\n{name}{{" in text, name
