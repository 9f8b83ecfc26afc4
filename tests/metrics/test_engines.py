"""The engine exporter speaks each workload's engine: SGLang's names and buckets for one labelled
`steward.dev/engine: sglang`, vLLM's for the others — every reading, also those the simulator
has none of (the KV cache), which the twin's Prometheus test cannot see."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from lab.twin.engines import ENGINE_LABEL, SGLANG_TTFT_BUCKETS, EngineExporter
from tests.metrics.cluster import truth

LINE = re.compile(r"^(?P<name>[^{ ]+)\{(?P<labels>[^}]*)\} (?P<value>\S+)$")


def _series(lines: list[str]) -> dict[tuple[str, str], list[dict[str, str]]]:
    """(metric name, pod) -> the label sets of its series."""
    out: dict[tuple[str, str], list[dict[str, str]]] = {}
    for line in lines:
        found = LINE.match(line)
        if found is None:
            assert line.startswith("# TYPE "), line
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', found["labels"]))
        out.setdefault((found["name"], labels["pod"]), []).append(labels)
    return out


def test_a_workload_labelled_sglang_is_written_under_sglangs_names() -> None:
    state = truth()
    chat = state.workload("chat")
    assert chat is not None
    labelled = chat.model_copy(update={"labels": {ENGINE_LABEL: "sglang"}})
    state = state.model_copy(
        update={"workloads": tuple(labelled if w.name == "chat" else w for w in state.workloads)}
    )
    exporter = EngineExporter()
    exporter.update(state)
    exporter.update(
        state.model_copy(update={"observed_at": state.observed_at + timedelta(seconds=15)})
    )
    series = _series(exporter.lines())
    names = {name for name, pod in series if pod == "chat-0"}
    assert names == {
        "sglang:num_queue_reqs",
        "sglang:num_running_reqs",
        "sglang:token_usage",
        "sglang:generation_tokens_total",
        "sglang:prompt_tokens_total",
        "sglang:num_requests_total",
        *(f"sglang:time_to_first_token_seconds_{p}" for p in ("bucket", "sum", "count")),
        *(f"sglang:queue_time_seconds_{p}" for p in ("bucket", "sum", "count")),
        *(f"sglang:inter_token_latency_seconds_{p}" for p in ("bucket", "sum", "count")),
        *(f"sglang:e2e_request_latency_seconds_{p}" for p in ("bucket", "sum", "count")),
    }
    assert {lb["model_name"] for lb in series[("sglang:token_usage", "chat-0")]} == {"llama-3-8b"}
    bounds = [lb["le"] for lb in series[("sglang:time_to_first_token_seconds_bucket", "chat-0")]]
    assert bounds == [repr(float(b)) for b in SGLANG_TTFT_BUCKETS] + ["+Inf"]
    code = {name for name, pod in series if pod == "code-0"}
    assert "vllm:num_requests_waiting" in code and not any(n.startswith("sglang") for n in code)


def _tokens(exporter: EngineExporter, pod: str) -> float:
    for line in exporter.lines():
        found = LINE.match(line)
        if found and found["name"] == "vllm:generation_tokens_total" and f'pod="{pod}"' in line:
            return float(found["value"])
    raise AssertionError(f"no token counter for {pod}")


def test_a_twin_faster_than_the_wall_clock_counts_tokens_per_simulated_second() -> None:
    """At `speed` S Prometheus dates the samples by its own (wall) clock, so each simulated
    second adds 1/S of its tokens: rate() over wall seconds is the simulated rate."""
    state = truth()
    chat = state.workload("chat")
    assert chat is not None and chat.tokens_per_s.value is not None
    later = state.model_copy(update={"observed_at": state.observed_at + timedelta(seconds=150)})
    real_time, tenfold = EngineExporter(), EngineExporter(speed=10)
    for exporter in (real_time, tenfold):
        exporter.update(state)
        exporter.update(later)
    per_replica = chat.tokens_per_s.value * 150 / chat.ready_replicas
    assert _tokens(real_time, "chat-0") == pytest.approx(per_replica, rel=1e-3)
    assert _tokens(tenfold, "chat-0") == pytest.approx(per_replica / 10, rel=1e-3)
