"""Serving: how a workload's replicas turn requests into tokens, as vLLM's scheduler does.

The model, per replica (each one a vLLM engine of its own; nothing is pooled between replicas):
- A least-loaded router (`dispatch`) sends each request to the ready replica with the fewest
  requests waiting and running; the request then belongs to that replica: it waits in the
  replica's queue, is prefilled by it and decoded by it. A request larger than the KV cache or
  the context length is rejected. While no replica is ready (or the gateway is closed), requests
  wait at the gateway (the workload's queue).
- Admission by the tokens a request actually holds: a waiting request is admitted when the KV
  cache has room for its prompt (beyond a 1 % watermark, as vLLM keeps) and the replica runs
  fewer than `max_num_seqs`. A running request then holds its prompt plus the tokens generated so
  far, one more each step. When the cache is full, the request admitted last is preempted: its
  KV is freed and it goes back to the front of the queue, to be prefilled again (prompt plus what
  it generated: vLLM's recompute) when room comes back.
- Each engine step has a token budget (`max_num_batched_tokens`, 8192 by default): the running
  decodes are scheduled first (one token each), and prefills are chunked into what is left,
  first come first served. A step with b decodes and k prefill tokens takes
  `a + c*b + k / prefill_tok_s` seconds, where the decode cost `a + c*b` is calibrated so that one
  stream decodes at the profile's single-stream speed and `max_num_seqs` streams together at its
  aggregate peak (`decode_step_s`).
- A request's first token comes out of the step that finishes its prefill (TTFT = queue wait +
  prefill, stretched by the decodes sharing those steps); its mean inter-token latency is the
  time from its first token to its last over its output tokens less one.
- GPU utilization is a duty cycle (`busy_s`): the time a step is running, whatever the batch, as
  DCGM's GPU_UTIL counts the time a kernel runs.

Between two events (a prefill finishing, a request finishing, the cache filling, the tick's end)
a replica's batch is constant, so its steps are all alike: `step` moves from event to event with
the steps' rates, not step by step. Decoding requests sit in a heap keyed by the "virtual decode
clock" `v` (steps run) at which they finish, so a request costs O(log n), and an idle replica
costs nothing. At fleet scale arrivals come as cohorts (`count` identical requests, demand.py),
which the router spreads over the replicas.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from lab.sim.demand import Request
from lab.sim.profiles import ServingSpec

KV_WATERMARK = 0.01
"""Share of the KV cache kept free when admitting (vLLM's watermark), so that a request just
preempted is not admitted again at once."""
EPS_TOKENS = 1e-6
COUNT_EPS = 1e-9
"""Fewer requests than this are none (a cohort's shares are fractions: lab.sim.router)."""


@dataclass(slots=True)
class Flight:
    """`count` identical requests (one, except in fleet-scale cohorts) held by one replica.

    A render job (lab.sim.jobs) is a Flight too: `prefill_left` is then its seconds of work."""

    arrival_s: float
    prefill_left: float
    """Tokens still to prefill, for the whole cohort (0 while waiting: set on admission)."""
    output_tokens: int
    kv_tokens: int
    """Context the request needs at most (input + output)."""
    count: float = 1
    """Requests it stands for: whole, except one replica's share of a cohort spread over
    replicas folded into one engine (lab.sim.router)."""
    first_token_s: float = -1.0
    input_tokens: int = 0
    generated: int = 0
    """Tokens generated before it was last admitted (after a preemption: recomputed)."""
    kv_base: float = 0.0
    """Decoding: KV tokens held per request at virtual clock v are `kv_base + v`."""


@dataclass(slots=True)
class Window:
    """Counters since the last reading (a scrape or a series point)."""

    tokens: float = 0.0
    prompt_tokens: float = 0.0
    ttft_sum: float = 0.0
    ttft_n: float = 0
    wait_sum: float = 0.0
    wait_n: float = 0
    stream_sum: float = 0.0
    stream_n: float = 0
    completed: float = 0
    rejected: float = 0
    aborted: float = 0
    preemptions: float = 0
    longest_rejected: int = 0
    """Tokens (input + output) of the longest request rejected for its context."""
    ttfts: list[tuple[float, float]] = field(default_factory=list)
    """(TTFT, requests) since the last reading: its quantiles."""
    itls: list[tuple[float, float]] = field(default_factory=list)
    """(mean inter-token latency, requests) of the requests finished since the last reading."""

    def reset(self) -> None:
        self.tokens = self.prompt_tokens = self.ttft_sum = self.wait_sum = self.stream_sum = 0.0
        self.ttft_n = self.wait_n = self.stream_n = 0
        self.completed = self.rejected = self.aborted = self.preemptions = 0
        self.longest_rejected = 0
        self.ttfts.clear()
        self.itls.clear()

    # One method per per-request event, so that a benchmark can keep each request's figures (a
    # subclass in lab/bench/trace), where the exporters only need these sums.

    def admitted(self, wait_s: float, arrival_s: float, count: float) -> None:
        """`count` requests that arrived at `arrival_s` leave the queue after `wait_s`."""
        self.wait_sum += wait_s * count
        self.wait_n += count

    def first_token(self, ttft_s: float, arrival_s: float, count: float) -> None:
        """`count` requests that arrived at `arrival_s` get their first token after `ttft_s`."""
        self.ttft_sum += ttft_s * count
        self.ttft_n += count
        self.tokens += count
        self.ttfts.append((ttft_s, count))

    def finished(
        self,
        arrival_s: float,
        ttft_s: float,
        itl_s: float | None,
        output_tokens: int,
        count: float,
    ) -> None:
        """`count` requests that arrived at `arrival_s` completed: their time to first token and
        mean inter-token latency (None for a single-token output: there is no gap to measure)."""
        self.completed += count
        if itl_s is not None and itl_s > 0:
            self.stream_sum += count / itl_s
            self.stream_n += count
            self.itls.append((itl_s, count))

    def preempted(self, count: float) -> None:
        """`count` running requests lost their KV cache and go back to be prefilled again."""
        self.preemptions += count


@dataclass(slots=True)
class Server:
    """One replica's engine: its queue, its running requests, its busy time."""

    waiting: deque[Flight] = field(default_factory=deque)
    """Routed to this replica, not running (a request preempted goes back to the front)."""
    waiting_n: float = 0.0
    prefilling: deque[Flight] = field(default_factory=deque)
    """Admitted, prefill not finished: first come, first served."""
    prefill_pending: float = 0.0
    """Tokens still to prefill over `prefilling`."""
    decoding: list[tuple[float, int, Flight]] = field(default_factory=list)
    """Heap of (v at which it finishes, join order, flight); a flight preempted whole has
    count 0 and is dropped when it comes up (the last to join is preempted first)."""
    in_flight: float = 0.0
    """Requests admitted (prefilling or decoding)."""
    streams: float = 0.0
    """Requests decoding."""
    v: float = 0.0
    """Virtual decode clock: steps run with decodes in them (tokens each running request got)."""
    kv_fixed: float = 0.0
    """KV tokens held = kv_fixed + streams * v (see `kv_used`)."""
    seq: int = 0
    busy_s: float = 0.0
    """Cumulative seconds a step was running (the duty cycle's numerator)."""
    clock: float = 0.0
    """Served up to here: a step runs whole, so it may end after the tick that began it."""

    @property
    def kv_used(self) -> float:
        """KV-cache tokens held now: the prompts admitted plus every token generated."""
        return self.kv_fixed + self.streams * self.v

    @property
    def has_work(self) -> bool:
        return self.in_flight > COUNT_EPS or self.waiting_n > COUNT_EPS

    def abort_all(self) -> float:
        """Drop every request, waiting or running; returns how many."""
        n = self.in_flight + self.waiting_n
        self.waiting.clear()
        self.prefilling.clear()
        self.decoding.clear()
        self.in_flight = self.streams = self.waiting_n = 0.0
        self.prefill_pending = self.kv_fixed = 0.0
        return n

    def oldest_waiting(self) -> float | None:
        return self.waiting[0].arrival_s if self.waiting else None


def decode_step_s(spec: ServingSpec) -> tuple[float, float]:
    """(a, c) of a decode step's time `a + c*b` with b requests decoding, in seconds.

    One stream gets the single-stream speed (a + c = 1 / single) and `max_num_seqs` streams
    together the aggregate peak (a + c*B = B / peak). A profile whose peak is above B streams at
    the single-stream speed gets c = 0 (no batching cost)."""
    single = 1.0 / spec.single_stream_tok_s
    b = spec.max_num_seqs
    c = max(0.0, (b / spec.aggregate_peak_tok_s - single) / (b - 1)) if b > 1 else 0.0
    return single - c, c


def too_long(need: int, kv_capacity: int, context_length: int | None) -> bool:
    """A request (input + output tokens) no replica can hold: the server refuses it."""
    return need > kv_capacity or (context_length is not None and need > context_length)


def dispatch(
    queue: deque[Request],
    servers: list[Server],
    *,
    kv_capacity: int,
    context_length: int | None,
    windows: tuple[Window, ...],
) -> None:
    """Route `queue` to `servers`, one engine per replica, least loaded first, whole requests;
    reject a request that no replica can hold. (The simulator's router, lab.sim.router, also
    folds replicas alike; this is the plain one.)"""
    while queue:
        req = queue.popleft()
        need = req.input_tokens + req.output_tokens
        if too_long(need, kv_capacity, context_length):
            for w in windows:
                w.rejected += req.count
                w.longest_rejected = max(w.longest_rejected, need)
            continue
        loads = [s.waiting_n + s.in_flight for s in servers]
        for server, k in zip(servers, _spread(loads, req.count), strict=True):
            if k:
                enqueue(server, req, float(k), need)


def enqueue(server: Server, req: Request, count: float, need: int) -> None:
    """`count` of `req`'s requests join the replica's queue."""
    server.waiting.append(
        Flight(req.arrival_s, 0.0, req.output_tokens, need, count, input_tokens=req.input_tokens)
    )
    server.waiting_n += count


def _spread(loads: list[float], count: int) -> list[int]:
    """How many of `count` requests each replica gets, filling the least loaded first."""
    out = [0] * len(loads)
    held = list(loads)
    for _ in range(count):
        i = min(range(len(held)), key=held.__getitem__)
        held[i] += 1
        out[i] += 1
    return out


def step(
    server: Server,
    spec: ServingSpec,
    *,
    t: float,
    dt: float,
    speed: float,
    kv_capacity: int,
    windows: tuple[Window, ...],
    copies: int = 1,
) -> None:
    """Serve for `dt` seconds from `t`; `speed` scales every rate (a degraded TP link).

    `copies`: the replicas this engine stands for (lab.sim.router); what it reports to
    `windows` counts for each of them."""
    a, c = decode_step_s(spec)
    a, c = a / speed, c / speed
    prefill_rate = spec.prefill_tok_s * speed
    budget = spec.max_num_batched_tokens
    cap = float(kv_capacity)
    now, end = max(t, server.clock), t + dt
    heap = server.decoding
    while now < end:
        if server.waiting:
            _admit(server, spec, cap, now, windows, copies)
        n = server.streams if server.streams > COUNT_EPS else 0.0
        pend = server.prefill_pending
        if not n and pend <= EPS_TOKENS:
            break
        while heap and heap[0][2].count <= COUNT_EPS:
            heapq.heappop(heap)
        dec = a + c * n if n else 0.0
        room = budget - n
        if EPS_TOKENS < pend <= room + EPS_TOKENS:
            # What is left to prefill fits one step: that step runs whole (it may end after
            # the tick: the replica's clock runs ahead), then its tokens come out.
            h = dec + pend / prefill_rate
            if n:
                server.v += 1.0
                for w in windows:
                    w.tokens += n * copies
            server.prefilling[-1].prefill_left = 0.0
            for fl in server.prefilling:
                fl.prefill_left = 0.0
            server.prefill_pending = 0.0
        else:
            # A backlog longer than one step's budget (chunked: `room` tokens a step, at a
            # steady rate), or decodes alone: rates are steady until the next event.
            h = end - now
            q = r = 0.0
            step_s = dec
            if pend > EPS_TOKENS and room > 0:
                step_s = dec + room / prefill_rate
                q = room / step_s  # prefill tokens per second
                h = min(h, server.prefilling[0].prefill_left / q, (pend - room) / q)
            if n:
                r = 1.0 / step_s  # tokens per second per request
                h = min(h, (heap[0][0] - server.v) / r, (cap - server.kv_used) / (n * r))
            h = max(h, 0.0)
            if n:
                server.v += h * r
                for w in windows:
                    w.tokens += n * h * r * copies
            if q:
                server.prefilling[0].prefill_left -= h * q
                server.prefill_pending -= h * q
        server.busy_s += h
        now += h
        while server.prefilling and server.prefilling[0].prefill_left <= EPS_TOKENS:
            _prefilled(server, now, windows, copies)
        while heap and heap[0][0] <= server.v + EPS_TOKENS:
            _finished(server, now, windows, copies)
        while server.streams > COUNT_EPS and server.kv_used >= cap - EPS_TOKENS:
            _preempt(server, windows, copies)
        if server.prefill_pending < EPS_TOKENS and not server.prefilling:
            server.prefill_pending = 0.0
    server.clock = now


def _admit(  # noqa: PLR0917 - one internal call shape
    server: Server,
    spec: ServingSpec,
    cap: float,
    now: float,
    windows: tuple[Window, ...],
    copies: int,
) -> None:
    """Admit waiting requests while the KV cache (less the watermark) and the batch have room."""
    limit = cap * (1.0 - KV_WATERMARK)
    while server.waiting:
        fl = server.waiting[0]
        need = fl.input_tokens + fl.generated
        free = (cap if server.in_flight == 0 else limit) - server.kv_used
        k = min(fl.count, free // need, spec.max_num_seqs - server.in_flight)
        if k <= COUNT_EPS:
            return
        if k < fl.count - COUNT_EPS:
            fl.count -= k
            fl = Flight(fl.arrival_s, 0.0, fl.output_tokens, fl.kv_tokens, k, fl.first_token_s,
                        fl.input_tokens, fl.generated)  # fmt: skip
        else:
            server.waiting.popleft()
            k = fl.count
        server.waiting_n -= k
        server.in_flight += k
        server.kv_fixed += need * k
        fl.prefill_left = float(need * k)
        server.prefill_pending += fl.prefill_left
        server.prefilling.append(fl)
        if fl.generated == 0:  # a request preempted was admitted once already
            for w in windows:
                w.admitted(now - fl.arrival_s, fl.arrival_s, k * copies)


def _prefilled(server: Server, now: float, windows: tuple[Window, ...], copies: int) -> None:
    """The head of the prefill queue is done: its (next) token comes out; it starts decoding."""
    fl = server.prefilling.popleft()
    server.prefill_pending -= fl.prefill_left
    fl.prefill_left = 0.0
    need = fl.input_tokens + fl.generated
    if fl.generated == 0:
        fl.first_token_s = now
        for w in windows:
            w.first_token(now - fl.arrival_s, fl.arrival_s, fl.count * copies)
            w.prompt_tokens += fl.input_tokens * fl.count * copies
    else:
        for w in windows:
            w.tokens += fl.count * copies
    fl.generated += 1
    rest = fl.output_tokens - fl.generated
    if rest <= 0:
        server.kv_fixed -= need * fl.count
        server.in_flight -= fl.count
        _report(fl, now, windows, copies)
        return
    fl.kv_base = need + 1 - server.v
    server.kv_fixed += (1 - server.v) * fl.count
    server.streams += fl.count
    server.seq += 1
    heapq.heappush(server.decoding, (server.v + rest, server.seq, fl))


def _finished(server: Server, now: float, windows: tuple[Window, ...], copies: int) -> None:
    v_done, _, fl = heapq.heappop(server.decoding)
    if fl.count <= COUNT_EPS:
        return
    for w in windows:  # a whole step ran past its last token: those were never made
        w.tokens -= (server.v - v_done) * fl.count * copies
    server.kv_fixed -= fl.kv_base * fl.count
    server.streams -= fl.count
    server.in_flight -= fl.count
    _report(fl, now, windows, copies)


def _report(fl: Flight, now: float, windows: tuple[Window, ...], copies: int) -> None:
    ttft = fl.first_token_s - fl.arrival_s
    itl = (now - fl.first_token_s) / (fl.output_tokens - 1) if fl.output_tokens > 1 else None
    for w in windows:
        w.finished(fl.arrival_s, ttft, itl, fl.output_tokens, fl.count * copies)


def _preempt(server: Server, windows: tuple[Window, ...], copies: int) -> None:
    """The KV cache is full: the request admitted last goes back to the front of the queue."""
    if server.prefilling:
        fl = server.prefilling[-1]
        part = min(1.0, fl.count)
        need = fl.input_tokens + fl.generated
        per = fl.prefill_left / fl.count
        fl.count -= part
        fl.prefill_left -= per * part
        server.prefill_pending -= per * part
        server.kv_fixed -= need * part
        if fl.count <= COUNT_EPS:
            server.prefilling.pop()
        made = fl.generated
    else:
        # The flight that started decoding last (the heap is small: a scan is cheap, and rare).
        live = (e for e in server.decoding if e[2].count > COUNT_EPS)
        fl = max(live, key=lambda e: e[1])[2]
        part = min(1.0, fl.count)
        # Its tokens so far: those it had when it joined, plus one per step since.
        joined_v = fl.input_tokens + fl.generated - fl.kv_base
        made = fl.generated + int(server.v - joined_v + EPS_TOKENS)
        fl.count -= part
        server.kv_fixed -= fl.kv_base * part
        server.streams -= part
    server.in_flight -= part
    back = Flight(fl.arrival_s, 0.0, fl.output_tokens, fl.kv_tokens, part, fl.first_token_s,
                  fl.input_tokens, made)  # fmt: skip
    server.waiting.appendleft(back)
    server.waiting_n += part
    for w in windows:
        w.preempted(part * copies)
