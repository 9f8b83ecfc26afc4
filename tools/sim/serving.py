"""Serving: how a workload's replicas turn queued requests into tokens, step by step.

The model (chunked prefill, as vLLM and SGLang schedule it):
- A replica admits a request only while its KV cache can hold the request's whole context
  (input + output tokens) and it runs fewer than `max_num_seqs`; a request larger than the cache
  or the context length is rejected.
- Each step, a replica spends its time on prefill first (FIFO, at the prefill rate), then on
  decode for the rest of the step. Decode gives every running request an equal share, capped at
  the single-stream speed per request and at the aggregate peak in total: one stream runs at
  20.3 tok/s, many streams together at no more than 84.5 tok/s (the seeds' figures).
- A request's first token comes out when its prefill ends (time to first token = queue wait +
  prefill); it completes after its output tokens.

The ready replicas of a workload share one `Server` of `width` replicas (capacity, KV cache and
sequence limit times the width): a least-loaded router balances them, so the pooled model is
what the replicas do together. A replica that stops takes its share of the running requests
with it (`split_off`): to finish them while draining, or to lose them with its node.

Cost: a step is O(1) plus O(log n) per completion: decoding requests sit in a heap keyed by the
"virtual decode clock" `v` (tokens each running request has received) at which they finish.
At fleet scale, arrivals come as cohorts (`count` identical requests, see demand.py), so the
cost per tick does not grow with the request rate.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from tools.sim.demand import Request
from tools.sim.profiles import ServingSpec


@dataclass(slots=True)
class Flight:
    """`count` identical admitted requests (one, except in fleet-scale cohorts)."""

    arrival_s: float
    prefill_left: float
    """Input tokens still to prefill, for the whole cohort."""
    output_tokens: int
    kv_tokens: int
    """KV reserved per request (input + output)."""
    count: int = 1
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
    longest_rejected: int = 0
    """Tokens (input + output) of the longest request rejected for its context."""

    def reset(self) -> None:
        self.tokens = self.ttft_sum = self.wait_sum = self.stream_sum = 0.0
        self.ttft_n = self.wait_n = self.stream_n = 0
        self.completed = self.rejected = self.aborted = self.longest_rejected = 0

    # One method per per-request event, so that a benchmark can keep each request's figures (a
    # subclass in evals/bench/trace), where the exporters only need these sums.

    def admitted(self, wait_s: float, arrival_s: float, count: int) -> None:
        """`count` requests that arrived at `arrival_s` leave the queue after `wait_s`."""
        self.wait_sum += wait_s * count
        self.wait_n += count

    def first_token(self, ttft_s: float, arrival_s: float, count: int) -> None:
        """`count` requests that arrived at `arrival_s` get their first token after `ttft_s`."""
        self.ttft_sum += ttft_s * count
        self.ttft_n += count
        self.tokens += count

    def finished(
        self, arrival_s: float, ttft_s: float, itl_s: float | None, output_tokens: int, count: int
    ) -> None:
        """`count` requests that arrived at `arrival_s` completed: their time to first token and
        mean inter-token latency (None for a single-token output: there is no gap to measure)."""
        self.completed += count
        if itl_s is not None and itl_s > 0:
            self.stream_sum += count / itl_s
            self.stream_n += count

    def preempted(self, count: int) -> None:
        """`count` running requests lost their KV cache and go back to be prefilled again."""


@dataclass(slots=True)
class Server:
    """Running requests of one replica, or of a workload's ready replicas together."""

    kv_used: int = 0
    in_flight: int = 0
    streams: int = 0
    """Requests decoding (the rest of `in_flight` is prefilling)."""
    v: float = 0.0
    seq: int = 0
    prefilling: deque[Flight] = field(default_factory=deque)
    decoding: list[tuple[float, int, Flight]] = field(default_factory=list)
    busy_s: float = 0.0
    """Cumulative busy time per replica (prefill, plus decode at its share of the peak)."""

    def abort_all(self) -> int:
        """Drop every running request; returns how many."""
        n = self.in_flight
        self.prefilling.clear()
        self.decoding.clear()
        self.kv_used = self.in_flight = self.streams = 0
        return n

    def split_off(self, fraction: float) -> Server:
        """Move `fraction` of the running requests (a stopping replica's share) to a new server."""
        out = Server(busy_s=self.busy_s, seq=self.seq)
        for fl in list(self.prefilling):
            k = _share(fl.count, fraction)
            if k:
                moved = _take(fl, k)
                if fl.count == 0:
                    self.prefilling.remove(fl)
                out.prefilling.append(moved)
                self._move(out, moved)
        kept = []
        for v_done, seq, fl in self.decoding:
            k = _share(fl.count, fraction)
            part = _take(fl, k) if k else None
            if fl.count:
                kept.append((v_done, seq, fl))
            if part is not None:
                out.decoding.append((v_done - self.v, seq, part))
                self._move(out, part)
                self.streams -= part.count
                out.streams += part.count
        heapq.heapify(kept)
        heapq.heapify(out.decoding)
        self.decoding = kept
        return out

    def _move(self, out: Server, fl: Flight) -> None:
        self.kv_used -= fl.kv_tokens * fl.count
        self.in_flight -= fl.count
        out.kv_used += fl.kv_tokens * fl.count
        out.in_flight += fl.count


def _share(count: int, fraction: float) -> int:
    return count if fraction >= 1.0 else round(count * fraction)


def _take(fl: Flight, k: int) -> Flight:
    """Split `k` requests off a cohort (the cohort keeps the rest)."""
    per = fl.prefill_left / fl.count
    fl.count -= k
    fl.prefill_left -= per * k
    return Flight(fl.arrival_s, per * k, fl.output_tokens, fl.kv_tokens, k, fl.first_token_s)


def admit(
    queue: deque[Request],
    server: Server,
    spec: ServingSpec,
    *,
    width: int,
    kv_capacity: int,
    context_length: int | None,
    t: float,
    windows: tuple[Window, ...],
) -> None:
    """Move requests from the workload's queue onto its `width` ready replicas while they fit."""
    kv_total = kv_capacity * width
    seqs_total = spec.max_num_seqs * width
    while queue:
        req = queue[0]
        need = req.input_tokens + req.output_tokens
        if need > kv_capacity or (context_length is not None and need > context_length):
            queue.popleft()
            for w in windows:
                w.rejected += req.count
                w.longest_rejected = max(w.longest_rejected, need)
            continue
        k = min(req.count, (kv_total - server.kv_used) // need, seqs_total - server.in_flight)
        if k <= 0:
            return
        if k == req.count:
            queue.popleft()
        else:
            req.count -= k
        server.kv_used += need * k
        server.in_flight += k
        server.prefilling.append(Flight(req.arrival_s, float(req.input_tokens * k),
                                        req.output_tokens, need, k))  # fmt: skip
        for w in windows:
            w.admitted(t - req.arrival_s, req.arrival_s, k)


def step(
    server: Server,
    spec: ServingSpec,
    *,
    t: float,
    dt: float,
    width: int,
    speed: float,
    windows: tuple[Window, ...],
) -> None:
    """Serve for `dt` seconds from `t` on `width` replicas; `speed` scales every rate."""
    prefill_rate = spec.prefill_tok_s * speed * width
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
            w.first_token(fl.first_token_s - fl.arrival_s, fl.arrival_s, fl.count)
        # The first token came out of prefill; the rest is decode.
        server.seq += 1
        server.streams += fl.count
        heapq.heappush(server.decoding, (server.v + fl.output_tokens - 1, server.seq, fl))
    busy = used
    n = server.streams
    remain = dt - used
    if n and remain > 0:
        single = spec.single_stream_tok_s * speed
        peak = spec.aggregate_peak_tok_s * speed * width
        rate = min(single, peak / n)  # tokens per second per running request
        v0 = server.v
        server.v = v1 = v0 + rate * remain
        tokens = rate * remain * n
        heap = server.decoding
        while heap and heap[0][0] <= v1:
            v_done, _, fl = heapq.heappop(heap)
            tokens -= (v1 - v_done) * fl.count
            server.kv_used -= fl.kv_tokens * fl.count
            server.in_flight -= fl.count
            server.streams -= fl.count
            decode_s = t + used + (v_done - v0) / rate - fl.first_token_s
            itl = decode_s / (fl.output_tokens - 1) if fl.output_tokens > 1 else None
            ttft = fl.first_token_s - fl.arrival_s
            for w in windows:
                w.finished(fl.arrival_s, ttft, itl, fl.output_tokens, fl.count)
        for w in windows:
            w.tokens += tokens
        busy += remain * min(1.0, n * single / peak)
    server.busy_s += busy
