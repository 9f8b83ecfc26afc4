"""Each workload's OpenAI-compatible endpoint, answered with the simulator's figures.

`GET /twin/workloads/W/v1/models` lists the model; `POST .../v1/chat/completions` answers as a
serving replica would: 503 when none is ready, 500 while a probe-failing fault holds, else a
chat completion whose `timings` (llama.cpp's server reports the same object) carry the
simulated prefill and decode speeds, so a probe reads the figures the simulator measures.
"""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

from lab.sim.backend import PROBE_OUTPUT_TOKENS, PROBE_PROMPT_TOKENS
from lab.sim.metrics import waiting_count
from lab.twin.parts import TwinParts


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "server_error", "code": status}}
    return web.Response(
        status=status, body=json.dumps(body).encode(), content_type="application/json"
    )


async def models(twin: TwinParts, request: web.Request) -> web.Response:
    spec = twin.sim.engine.specs.get(request.match_info["workload"])
    if spec is None:
        return _error(404, "no such workload")
    data = [
        {
            "id": spec.model or spec.name,
            "object": "model",
            "created": 0,
            "owned_by": "steward-twin",
            "max_model_len": spec.context_length,
        }
    ]
    return web.json_response({"object": "list", "data": data})


async def metrics(twin: TwinParts, request: web.Request) -> web.Response:
    """vLLM's gauges for the workload, in the Prometheus text format (classic)."""
    name = request.match_info["workload"]
    run = twin.sim.engine.state.workloads.get(name)
    if run is None:
        return _error(404, "no such workload")
    running = sum(r.server.in_flight for r in run.replicas)
    label = f'{{model_name="{twin.sim.engine.specs[name].model or name}"}}'
    lines = [
        "# HELP vllm:num_requests_running Number of requests currently running on GPU.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{label} {float(running)}",
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
        "# TYPE vllm:num_requests_waiting gauge",
        f"vllm:num_requests_waiting{label} {float(waiting_count(run))}",
    ]
    return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")


async def chat(twin: TwinParts, request: web.Request) -> web.Response:
    name = request.match_info["workload"]
    spec = twin.sim.engine.specs.get(name)
    if spec is None:
        return _error(404, "no such workload")
    try:
        body: Any = await request.json()
    except json.JSONDecodeError:
        return _error(400, "the body is not JSON")
    probe = twin.sim.probe(name)
    if not probe.ok:
        return _error(503 if probe.ready_replicas == 0 else 500, probe.message)
    out = min(int(body.get("max_tokens") or PROBE_OUTPUT_TOKENS), PROBE_OUTPUT_TOKENS)
    timings: dict[str, float] = {"prompt_n": PROBE_PROMPT_TOKENS, "predicted_n": out}
    if probe.tokens_per_s and spec.serving is not None and probe.latency_s is not None:
        decode_s = PROBE_OUTPUT_TOKENS / probe.tokens_per_s
        timings.update(
            prompt_ms=round((probe.latency_s - decode_s) * 1000, 3),
            predicted_ms=round(decode_s * 1000, 3),
            predicted_per_second=probe.tokens_per_s,
        )
    return web.json_response(
        {
            "id": f"chatcmpl-twin-{twin.store.rv}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": spec.model or spec.name,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "length",
                    "message": {"role": "assistant", "content": "ok " * out},
                }
            ],
            "usage": {
                "prompt_tokens": PROBE_PROMPT_TOKENS,
                "completion_tokens": out,
                "total_tokens": PROBE_PROMPT_TOKENS + out,
            },
            "timings": timings,
            "context_length": spec.context_length,
        }
    )
