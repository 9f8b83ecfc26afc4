"""The twin's exporters speak as DCGM and vLLM do: a card's series carry its UUID, host and
index, an engine's the name of a pod the API lists, a job queue its workload's name, and every
sample the simulated time — except in real time, which writes none, as the real exporters (only
untimed samples let Prometheus mark a vanished pod's series stale)."""

from __future__ import annotations

import re

import httpx
import pytest

from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.server import Twin

SAMPLE = re.compile(r"^(?P<name>[^{ ]+)\{(?P<labels>[^}]*)\} (?P<value>\S+) (?P<ms>\d+)$")
UNTIMED = re.compile(r"^[^{ ]+(\{[^}]*\})? \S+$")


def _samples(body: str) -> list[tuple[str, dict[str, str], int]]:
    out = []
    for line in body.splitlines():
        if line.startswith("#") or not line:
            continue
        found = SAMPLE.match(line)
        assert found is not None, line
        labels = dict(re.findall(r'(\w+)="([^"]*)"', found["labels"]))
        out.append((found["name"], labels, int(found["ms"])))
    return out


def test_cards_and_engines_are_exported_under_real_names_at_the_simulated_time() -> None:
    with Twin(SimCluster(default_day())) as twin:
        twin.advance(15 * 45)  # burst-llm has borrowed render-1's cards by now
        now_ms = round(twin.call(lambda: twin.sim.now).timestamp() * 1000)
        cards = _samples(httpx.get(f"{twin.url}/twin/exporters/dcgm/metrics").text)
        engines = _samples(httpx.get(f"{twin.url}/twin/exporters/engines/metrics").text)
        queues = _samples(httpx.get(f"{twin.url}/twin/exporters/kueue/metrics").text)
        observed = twin.call(twin.sim.observe)
        render = observed.workload("render")
        pods = {
            p["metadata"]["name"]
            for p in httpx.get(f"{twin.url}/api/v1/namespaces/default/pods").json()["items"]
        }
        uuids = {g.uuid: (n.name, g.index) for n in observed.nodes for g in n.gpus}
    util = [labels for name, labels, _ in cards if name == "DCGM_FI_DEV_GPU_UTIL"]
    assert {(lb["UUID"], lb["Hostname"], int(lb["gpu"])) for lb in util} == {
        (u, host, i) for u, (host, i) in uuids.items()
    }
    waiting = [labels for name, labels, _ in engines if name == "vllm:num_requests_waiting"]
    assert waiting and all(lb["pod"] in pods and lb["namespace"] == "default" for lb in waiting)
    assert any(name == "inference_pool_average_queue_size" for name, _, _ in engines)
    assert render is not None and render.queue_depth.usable
    assert [(lb["name"], lb["namespace"]) for _, lb, _ in queues] == [("render", "default")]
    assert {ms for _, _, ms in cards + engines + queues} == {now_ms}


def test_a_twin_in_real_time_writes_no_sample_times() -> None:
    """`steward twin --speed 1` unstamps its exporters: Prometheus then stamps each scrape and
    marks the series of a pod that went stale at the next one, as it never does for samples with
    times of their own (tests/kubernetes/test_run_prometheus_process.py shows it end to end)."""
    with Twin(SimCluster(default_day())) as twin:
        twin.exporters.stamped = False
        for name in ("dcgm", "engines", "kueue"):
            body = httpx.get(f"{twin.url}/twin/exporters/{name}/metrics").text
            samples = [line for line in body.splitlines() if line and not line.startswith("#")]
            assert samples, name
            assert not any(SAMPLE.match(line) for line in samples), samples[:3]
            assert all(UNTIMED.match(line) for line in samples), samples[:3]


def test_an_engines_histograms_take_one_observation_per_request() -> None:
    """As vLLM's: each finished request is one observation of its end-to-end latency, so the
    counts over a workload's pods add up to the requests the simulator finished (its series'
    own count); the TTFT histogram counts every first token, the queue time every admission."""
    with Twin(SimCluster(default_day())) as twin:
        interval = twin.sim.profile.series_interval_s
        twin.advance(interval * 20)  # a series point now: the series counts up to this instant
        body = httpx.get(f"{twin.url}/twin/exporters/engines/metrics").text
        served = twin.call(lambda: twin.sim.series("tts"))
    counts: dict[str, float] = {}
    for name, labels, value in _values(body):
        if name.endswith("_count") and labels["model_name"] == "tts":
            counts[name] = counts.get(name, 0.0) + value
    finished = sum(p.completed for p in served.points)
    assert finished > 0
    assert counts["vllm:e2e_request_latency_seconds_count"] == pytest.approx(finished)
    first_tokens = counts["vllm:time_to_first_token_seconds_count"]
    admitted = counts["vllm:request_queue_time_seconds_count"]
    assert finished <= first_tokens <= admitted
    assert counts["vllm:inter_token_latency_seconds_count"] <= finished


def _values(body: str) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in body.splitlines():
        found = SAMPLE.match(line)
        if found is not None:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', found["labels"]))
            out.append((found["name"], labels, float(found["value"])))
    return out
