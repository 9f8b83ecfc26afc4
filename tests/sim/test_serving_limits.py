"""Serving never beats its limits: the aggregate peak, the single-stream speed, the KV cache;
and no request is lost: arrived = queued + running + completed + rejected (property-based)."""

from __future__ import annotations

from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from tools.sim.demand import Request
from tools.sim.profiles import ServingSpec
from tools.sim.serving import Server, Window, admit, step

SPEC = ServingSpec(
    single_stream_tok_s=20.0,
    aggregate_peak_tok_s=85.0,
    prefill_tok_s=1200.0,
    kv_bytes_per_token=1024,
    max_num_seqs=16,
)
KV_CAPACITY = 40_000
DT = 0.5

requests = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=40),  # arrival tick
        st.integers(min_value=1, max_value=8_000),  # input tokens
        st.integers(min_value=1, max_value=2_000),  # output tokens
        st.integers(min_value=1, max_value=5),  # cohort size
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(requests, st.integers(min_value=1, max_value=3))
def test_limits_hold_and_nothing_is_lost(reqs: list[tuple[int, int, int, int]], width: int) -> None:
    queue: deque[Request] = deque()
    server = Server()
    window = Window()
    arrived = 0
    ticks = 120
    for tick in range(ticks):
        t = tick * DT
        for at, inp, out, count in reqs:
            if at == tick:
                queue.append(Request(t, inp, out, "w", count))
                arrived += count
        admit(queue, server, SPEC, width=width, kv_capacity=KV_CAPACITY, context_length=None,
              t=t, windows=(window,))  # fmt: skip
        assert server.kv_used <= KV_CAPACITY * width
        assert server.in_flight <= SPEC.max_num_seqs * width
        tokens_before, firsts_before = window.tokens, window.ttft_n
        step(server, SPEC, t=t, dt=DT, width=width, speed=1.0, windows=(window,))
        # Each request's first token comes out of prefill; the rest is decode, bounded by the peak.
        decoded = window.tokens - tokens_before - (window.ttft_n - firsts_before)
        assert decoded <= SPEC.aggregate_peak_tok_s * width * DT + 1e-6
        assert 0 <= server.streams <= server.in_flight
    queued = sum(r.count for r in queue)
    assert arrived == queued + server.in_flight + window.completed + window.rejected
    if window.stream_n:
        assert window.stream_sum / window.stream_n <= SPEC.single_stream_tok_s + 1e-6


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(min_value=1, max_value=200), st.floats(min_value=0.05, max_value=1.0))
def test_a_stopping_replica_takes_its_share_and_nothing_more(cohort: int, fraction: float) -> None:
    server = Server()
    queue = deque([Request(0.0, 100, 500, "w", cohort)])
    admit(queue, server, SPEC, width=200, kv_capacity=KV_CAPACITY, context_length=None, t=0.0,
          windows=())  # fmt: skip
    step(server, SPEC, t=0.0, dt=DT, width=200, speed=1.0, windows=())
    total, kv = server.in_flight, server.kv_used
    part = server.split_off(fraction)
    assert part.in_flight + server.in_flight == total
    assert part.kv_used + server.kv_used == kv
    assert part.streams + server.streams <= total
