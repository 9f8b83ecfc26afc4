"""One replica's engine steps as vLLM schedules them: running decodes first, prefill chunked into
the rest of the token budget; a decode step costs a + c*b, calibrated to the profile's figures."""

from __future__ import annotations

from collections import deque

import pytest

from lab.sim.demand import Request
from lab.sim.profiles import ServingSpec
from lab.sim.serving import Server, Window, decode_step_s, dispatch, step

SPEC = ServingSpec(
    single_stream_tok_s=60.0, aggregate_peak_tok_s=1_500.0, prefill_tok_s=12_000.0
)  # the fleet's qwen3-32b figures
KV = 10_000_000


def _run(server: Server, window: Window, t: float, seconds: float, dt: float = 0.5) -> float:
    end = t + seconds
    while t < end - 1e-9:
        step(server, SPEC, t=t, dt=dt, speed=1.0, kv_capacity=KV, windows=(window,))
        t += dt
    return t


def _submit(server: Server, window: Window, reqs: list[Request]) -> None:
    dispatch(deque(reqs), [server], kv_capacity=KV, context_length=None, windows=(window,))


def test_an_idle_replica_prefills_a_long_prompt_at_its_prefill_rate() -> None:
    server, window = Server(), Window()
    _submit(server, window, [Request(0.0, 32_768, 2, "w")])
    _run(server, window, 0.0, 10.0)
    assert window.ttfts[0][0] == pytest.approx(32_768 / SPEC.prefill_tok_s)


def test_running_decodes_delay_a_new_prompts_first_token_by_the_token_budget() -> None:
    server, window = Server(), Window()
    _submit(server, window, [Request(0.0, 10, 100_000, "w") for _ in range(200)])
    t = _run(server, window, 0.0, 2.0)
    assert server.streams == 200
    prompt = Request(t, 32_768, 2, "w")
    _submit(server, window, [prompt])
    window.ttfts.clear()
    _run(server, window, t, 20.0)
    a, c = decode_step_s(SPEC)
    decode = a + c * 200
    room = SPEC.max_num_batched_tokens - 200
    # Every step runs the 200 decodes first and prefills `room` tokens of the prompt: the
    # prompt needs 32,768 / room steps, each one decode step plus its chunk's prefill.
    expected = 32_768 / SPEC.prefill_tok_s + 32_768 / room * decode
    assert window.ttfts[0][0] == pytest.approx(expected, rel=1e-6)
    alone = 32_768 / SPEC.prefill_tok_s
    assert expected > alone + 0.4, "the decodes cost the new prompt a visible delay"


@pytest.mark.parametrize("batch", [1, 4, 16, 64, 128, 256])
def test_throughput_against_batch_follows_the_calibrated_curve(batch: int) -> None:
    server, window = Server(), Window()
    _submit(server, window, [Request(0.0, 1, 100_000, "w") for _ in range(batch)])
    t = _run(server, window, 0.0, 1.0)
    assert server.streams == batch
    before = window.tokens
    _run(server, window, t, 10.0)
    per_s = (window.tokens - before) / 10.0
    a, c = decode_step_s(SPEC)
    assert per_s == pytest.approx(batch / (a + c * batch), rel=1e-9)
    if batch == 1:
        assert per_s == pytest.approx(SPEC.single_stream_tok_s)
    if batch == SPEC.max_num_seqs:
        assert per_s == pytest.approx(SPEC.aggregate_peak_tok_s)
    assert server.busy_s == pytest.approx(t + 10.0), "busy the whole time: a duty cycle"


def test_an_idle_replica_is_not_busy() -> None:
    server, window = Server(), Window()
    _submit(server, window, [Request(0.0, 1_200, 60, "w")])
    _run(server, window, 0.0, 10.0)
    # 0.1 s of prefill, then 59 tokens at ~60 tok/s: busy ~1.08 s of the 10.
    assert server.busy_s == pytest.approx(1_200 / SPEC.prefill_tok_s + 59 / 60.0, rel=1e-3)
    assert window.completed == 1
    (itl, _) = window.itls[0]
    assert itl == pytest.approx(1 / 60.0, rel=1e-6)
