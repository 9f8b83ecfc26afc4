"""Each replica is an engine of its own: a prompt is prefilled by the one replica that admitted
it, and the router sends work to the least loaded."""

from __future__ import annotations

from collections import deque

import pytest

from lab.sim.backend import SimCluster
from lab.sim.demand import Request
from lab.sim.profiles import ServingSpec
from lab.sim.scenario import FleetProfile, Scenario
from lab.sim.serving import Server, Window, dispatch, step

PROMPT = 32_768


def test_two_replicas_one_32k_prompt_its_ttft_is_one_replicas_prefill_time() -> None:
    spec = ServingSpec(single_stream_tok_s=60.0, aggregate_peak_tok_s=1_500.0,
                       prefill_tok_s=12_000.0)  # fmt: skip
    servers, window = [Server(), Server()], Window()
    queue = deque([Request(0.0, PROMPT, 2, "w")])
    dispatch(queue, servers, kv_capacity=100_000, context_length=None, windows=(window,))
    t = 0.0
    while t < 10.0:
        for server in servers:
            step(server, spec, t=t, dt=0.5, speed=1.0, kv_capacity=100_000, windows=(window,))
        t += 0.5
    (ttft, count) = window.ttfts[0]
    assert count == 1
    assert ttft == pytest.approx(PROMPT / spec.prefill_tok_s)
    assert sorted(s.busy_s for s in servers)[0] == 0.0, "the other replica did nothing for it"


def test_in_the_simulator_a_prompt_is_prefilled_by_one_replica_of_two() -> None:
    scenario = Scenario(
        profile=FleetProfile(nodes=4, gpus_per_node=8), replicas={"llm-small-000": 2}
    )
    sim = SimCluster.from_scenario(scenario)
    sim.advance(200)  # both replicas loaded (120 s)
    engine = sim.engine
    run = engine.state.workloads["llm-small-000"]
    assert run.ready == 2
    spec = engine.specs["llm-small-000"].serving
    assert spec is not None
    window = Window()
    run.series = window
    prompt = 30_000  # within the fleet's 32,768-token context, with its output
    engine.route(Request(sim.elapsed_s, prompt, 2, "llm-small-000"))
    sim.advance(30)
    (ttft, count) = window.ttfts[0]
    assert count == 1
    # Queued for at most one tick (arrivals wait for the next), then one replica's prefill.
    prefill_s = prompt / spec.prefill_tok_s
    assert prefill_s <= ttft <= prefill_s + engine.profile.tick_s + 1e-6
    busy = sorted(r.server.busy_s for r in run.replicas)
    assert busy[0] == 0.0, "the other replica did nothing for it"


def test_the_router_sends_a_cohort_to_the_least_loaded_replicas() -> None:
    servers = [Server() for _ in range(3)]
    busy = Request(0.0, 100, 100, "w", 5)
    dispatch(deque([busy]), servers[:1], kv_capacity=100_000, context_length=None, windows=())
    dispatch(
        deque([Request(0.0, 100, 100, "w", 7)]),
        servers,
        kv_capacity=100_000,
        context_length=None,
        windows=(),
    )
    # The busy replica holds 5; the 7 new requests fill the two idle ones: 4 and 3.
    assert [s.waiting_n for s in servers] == [5, 4, 3]


def test_a_request_no_replica_can_hold_is_rejected() -> None:
    window = Window()
    queue = deque([Request(0.0, 30_000, 5_000, "w")])
    dispatch(queue, [Server()], kv_capacity=100_000, context_length=32_768, windows=(window,))
    assert window.rejected == 1
    assert window.longest_rejected == 35_000


def test_preemption_recomputes_and_every_request_finishes() -> None:
    spec = ServingSpec(
        single_stream_tok_s=50.0, aggregate_peak_tok_s=800.0, prefill_tok_s=10_000.0,
        max_num_seqs=64,
    )  # fmt: skip
    capacity = 20_000
    server, window = Server(), Window()
    # Twenty requests of 500 prompt tokens fit at first (10,000 tokens); as each generates up to
    # 1,500 more, the cache fills and the last admitted go back to be prefilled again.
    queue = deque([Request(0.0, 500, 1_500, "w") for _ in range(20)])
    dispatch(queue, [server], kv_capacity=capacity, context_length=None, windows=(window,))
    t = 0.0
    while server.has_work and t < 3_600:
        step(server, spec, t=t, dt=1.0, speed=1.0, kv_capacity=capacity, windows=(window,))
        assert server.kv_used <= capacity + 1e-6
        t += 1.0
    assert window.completed == 20
    assert window.preemptions > 0
    assert window.ttft_n == 20, "a request preempted gets no second first token"
    # Every token once, and again the part of a token a preempted request was working on.
    assert 20 * 1_500 <= window.tokens <= 20 * 1_500 + window.preemptions
    slowest = max(itl for itl, _ in window.itls)
    assert slowest > 1 / spec.single_stream_tok_s, "preempted requests stall"
    step(server, spec, t=t, dt=1.0, speed=1.0, kv_capacity=capacity, windows=(window,))
    assert abs(server.kv_used) < 1e-6, "every token held was given back"
