"""A workload's serving endpoint, spoken to over HTTP: the probe and the requests in flight.

Not the API server: the engine behind the workload (vLLM, SGLang, llama.cpp's server), at the
URL its `steward.dev/endpoint` annotation names, else its Service's in-cluster name. The probe
is a real OpenAI-compatible chat completion; requests in flight come from the engine's own
Prometheus text (`vllm:num_requests_running`, in either spelling).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from tools.backends.base import ProbeResult
from tools.backends.kubernetes import contract as c
from tools.errors import BackendUnavailable

Obj = dict[str, Any]
PORT = 8000
"""Where an engine listens when the workload names no endpoint (vLLM's default)."""
RUNNING = ("vllm:num_requests_running", "vllm_num_requests_running")


def url_of(workload: Obj, namespace: str) -> str:
    """The base URL of a workload object's endpoint, without a trailing slash."""
    found = (workload["metadata"].get("annotations") or {}).get(c.ENDPOINT)
    if found:
        return str(found).rstrip("/")
    name = workload["metadata"]["name"]
    return f"http://{name}.{namespace}.svc.cluster.local:{PORT}"


def running_requests(workload: str, base: str, timeout: float) -> int:
    """Requests the engine at `base` is running now."""
    url = base + "/metrics"
    try:
        text = httpx.get(url, timeout=timeout).text
    except httpx.HTTPError as exc:
        raise BackendUnavailable(f"{workload}: {url}: {exc}") from exc
    total = 0.0
    for line in text.splitlines():  # either name: see Prometheus' OpenMetrics rewrite
        if line.startswith(RUNNING):
            total += float(line.rsplit(" ", 1)[-1])
    return int(total)


def probe(workload: str, base: str, model: str, *, ready: int, timeout: float) -> ProbeResult:
    """One chat completion through the endpoint: whether it answered, and how fast."""
    if ready == 0:
        return ProbeResult(
            workload=workload, ok=False, ready_replicas=0, message="no ready replica answers"
        )
    url = base + "/v1/chat/completions"
    body = {"model": model, "messages": [{"role": "user", "content": "Say ok."}], "max_tokens": 64}
    started = time.monotonic()
    try:
        resp = httpx.post(url, json=body, timeout=timeout)
    except httpx.HTTPError as exc:
        return ProbeResult(
            workload=workload, ok=False, ready_replicas=ready, message=f"{workload}: {url}: {exc}"
        )
    latency = time.monotonic() - started
    if resp.status_code != 200:
        return ProbeResult(
            workload=workload,
            ok=False,
            ready_replicas=ready,
            message=f"{workload}: the endpoint answered HTTP {resp.status_code}",
        )
    data = resp.json()
    out = int((data.get("usage") or {}).get("completion_tokens") or 0)
    timings = data.get("timings") or {}
    tok_s = timings.get("predicted_per_second") or (out / latency if latency > 0 else None)
    if "prompt_ms" in timings and "predicted_ms" in timings:
        latency = (timings["prompt_ms"] + timings["predicted_ms"]) / 1000
    return ProbeResult(
        workload=workload,
        ok=True,
        ready_replicas=ready,
        tokens_per_s=round(float(tok_s), 2) if tok_s else None,
        context_length=data.get("context_length"),
        latency_s=round(latency, 3),
        message=f"{out} tokens at {float(tok_s or 0):.1f} tok/s",
    )
