"""Serving: how one replica turns queued requests into tokens, step by step.

The model (chunked prefill, as vLLM and SGLang schedule it):
- A replica admits a request from its workload's queue only while its KV cache can hold the
  request's whole context (input + output tokens) and it runs fewer than `max_num_seqs`;
  a request larger than the cache or the context length is rejected.
- Each step, the replica spends its time on prefill first (FIFO, at the prefill rate), then on
  decode for the rest of the step. Decode gives every running request an equal share, capped at
  the single-stream speed per request and at the aggregate peak in total: one stream runs at
  20.3 tok/s, many streams together at no more than 84.5 tok/s (the seeds' figures).
- A request's first token comes out when its prefill ends (time to first token = queue wait +
  prefill); it completes after its output tokens.

Cost per step is O(1) plus O(log n) per completion: decoding requests sit in a heap keyed by the
"virtual decode clock" `v` (tokens each running request has received) at which they finish,
so a busy replica with hundreds of streams steps in microseconds.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from tools.sim.demand import Request
from tools.sim.profiles import ServingSpec


@dataclass(slots=True)
class Flight:
    """One admitted request on a replica."""

    arrival_s: float
    admitted_s: float
    prefill_left: float
    output_tokens: int
    kv_tokens: int
    first_token_s: float = -1.0


@dataclass(slots=True)
class Window:
    """Counters since the last reading (a scrape or a series point)."""

    tokens: float = 0.0
    ttft_sum: float = 0.0
    ttft_n: int = 0
    wait_sum: float = 0.0
    wait_n: int = 0
    stream_sum: float = 0.0
    stream_n: int = 0
    completed: int = 0
    rejected: int = 0
    aborted: int = 0

    def reset(self) -> None:
        self.tokens = self.ttft_sum = self.wait_sum = self.stream_sum = 0.0
        self.ttft_n = self.wait_n = self.stream_n = 0
        self.completed = self.rejected = self.aborted = 0


@dataclass(slots=True)
class Server:
    """The serving state of one replica."""

    kv_used: int = 0
    v: float = 0.0
    seq: int = 0
    prefilling: deque[Flight] = field(default_factory=deque)
    decoding: list[tuple[float, int, Flight]] = field(default_factory=list)
    busy_s: float = 0.0
    """Cumulative busy time (prefill plus decode at its fraction of the peak): utilization."""

    @property
    def in_flight(self) -> int:
        return len(self.prefilling) + len(self.decoding)

    def abort_all(self) -> int:
        """Drop every running request (the replica died); returns how many."""
        n = self.in_flight
        self.prefilling.clear()
        self.decoding.clear()
        self.kv_used = 0
        return n


def admit(
    queue: deque[Request],
    servers: list[Server],
    spec: ServingSpec,
    *,
    kv_capacity: int,
    context_length: int | None,
    t: float,
    windows: tuple[Window, ...],
) -> None:
    """Move requests from the workload's queue onto the replicas with the most free KV cache."""
    if not servers:
        return
    while queue:
        req = queue[0]
        need = req.input_tokens + req.output_tokens
        if need > kv_capacity or (context_length is not None and need > context_length):
            queue.popleft()
            for w in windows:
                w.rejected += 1
            continue
        best = max(servers, key=lambda s: kv_capacity - s.kv_used)
        if kv_capacity - best.kv_used < need or best.in_flight >= spec.max_num_seqs:
            return
        queue.popleft()
        best.kv_used += need
        best.prefilling.append(
            Flight(req.arrival_s, t, float(req.input_tokens), req.output_tokens, need)
        )
        for w in windows:
            w.wait_sum += t - req.arrival_s
            w.wait_n += 1


def step(
    server: Server,
    spec: ServingSpec,
    *,
    t: float,
    dt: float,
    speed: float,
    windows: tuple[Window, ...],
) -> None:
    """Serve for `dt` seconds from `t`; `speed` scales every rate (a degraded TP link)."""
    prefill_rate = spec.prefill_tok_s * speed
    used = 0.0
    prefilling = server.prefilling
    while prefilling and used < dt:
        fl = prefilling[0]
        need = fl.prefill_left / prefill_rate
        if need > dt - used:
            fl.prefill_left -= (dt - used) * prefill_rate
            used = dt
            break
        used += need
        prefilling.popleft()
        fl.prefill_left = 0.0
        fl.first_token_s = t + used
        for w in windows:
            w.ttft_sum += fl.first_token_s - fl.arrival_s
            w.ttft_n += 1
            w.tokens += 1
        # The first token came out of prefill; the rest is decode.
        server.seq += 1
        heapq.heappush(server.decoding, (server.v + fl.output_tokens - 1, server.seq, fl))
    busy = used
    n = len(server.decoding)
    remain = dt - used
    if n and remain > 0:
        single = spec.single_stream_tok_s * speed
        peak = spec.aggregate_peak_tok_s * speed
        rate = min(single, peak / n)  # tokens per second per running request
        v0 = server.v
        share = rate * remain
        server.v = v1 = v0 + share
        tokens = share * n
        heap = server.decoding
        while heap and heap[0][0] <= v1:
            v_done, _, fl = heapq.heappop(heap)
            tokens -= v1 - v_done
            done_s = t + used + (v_done - v0) / rate
            server.kv_used -= fl.kv_tokens
            decode_s = done_s - fl.first_token_s
            for w in windows:
                w.completed += 1
                if decode_s > 0 and fl.output_tokens > 1:
                    w.stream_sum += (fl.output_tokens - 1) / decode_s
                    w.stream_n += 1
        for w in windows:
            w.tokens += tokens
        busy += remain * min(1.0, n * single / peak)
    server.busy_s += busy
