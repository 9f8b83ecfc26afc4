"""One replica's slots from its profile, the online correction, and sizing to the SLO."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.capacity.forecast import Forecast
from agent.capacity.release import dips, quiet_enough, release_after, release_to
from agent.capacity.replica import capacity, corrected, drifted, largest_batch
from agent.capacity.sizing import Demand, size
from tools.model import ServingProfile

# Qwen3-32B-like: ITL(b) = 10 ms + 1.5 ms x b, 4,000 tok/s prefill, 300k KV tokens.
PROFILE = ServingProfile(
    prefill_tok_s=4000, itl_base_s=0.010, itl_per_seq_s=0.0015, kv_tokens=300_000
)


def test_the_largest_batch_meets_the_itl_target() -> None:
    b = largest_batch(PROFILE, 0.1)
    assert b == 60
    assert PROFILE.itl_base_s + PROFILE.itl_per_seq_s * b <= 0.1
    assert PROFILE.itl_base_s + PROFILE.itl_per_seq_s * (b + 1) > 0.1


def test_prefill_time_and_long_requests_shrink_the_slots() -> None:
    free = capacity(PROFILE, 0.1)
    busy = capacity(PROFILE, 0.1, prefill_share=0.3)
    assert busy.slots < free.slots
    long = capacity(PROFILE, 0.1, tokens_per_request=20_000)
    assert long.slots == 13 and long.limited_by == "kv"


def test_the_correction_is_bounded_and_a_drift_is_told() -> None:
    c = 1.0
    for _ in range(200):
        c, raw = corrected(c, observed_tok_s=100.0, streams=40, profile=PROFILE)
    assert abs(c - 0.75) < 1e-6  # the replica serves far less than profiled: clamped, not re-fitted
    assert drifted(raw)
    assert not drifted(1.1)


def _demand(mean: float, sd: float = 0.0, queued: float = 0.0) -> Demand:
    return Demand(
        now=mean,
        forecast=Forecast(mean=mean, sd=sd, horizon_s=105),
        short_high=mean,
        queued=queued,
        prompt_tokens=1000,
        output_tokens=250,
    )


def test_sizing_asks_more_for_more_work_and_for_a_backlog() -> None:
    cap = capacity(PROFILE, 0.1)
    small = size(_demand(30), cap, ttft_s=3.0)
    big = size(_demand(300), cap, ttft_s=3.0)
    assert 1 <= small.need < big.need
    queued = size(_demand(30, queued=400), cap, ttft_s=3.0)
    assert queued.need > small.need and queued.deciding == "backlog"
    assert "forecast 30.0" in small.words and "->" in small.words


def test_the_prefill_queue_asks_for_the_replicas_that_keep_a_prompts_wait_short() -> None:
    """40,000 prompt tokens/s at 4,000 tok/s a replica, 1,000-token prompts (0.25 s each): the
    wait rho / (1 - rho) x 0.25 s must stay within half of what a 3 s target leaves after the
    prompt's own prefill (1.375 s), so rho <= 5.5 / 6.5 and 40,000 / (4,000 x rho) = 11.8: 12
    replicas, where the slots alone would ask for one."""
    cap = capacity(PROFILE, 0.1)
    demand = _demand(30).model_copy(update={"prompt_rate": 40_000.0})
    sized = size(demand, cap, ttft_s=3.0)
    assert sized.terms["prefill"] == 12 and sized.need == 12 and sized.deciding == "prefill"
    assert "prefills 4000 tok/s (40000 asked)" in sized.words
    # A tighter share of the target asks for more; no prompt rate known, no prefill term.
    assert size(demand, cap, ttft_s=3.0, ttft_share=0.1).terms["prefill"] > 12
    assert size(_demand(30), cap, ttft_s=3.0).terms["prefill"] == 0
    # A prompt whose own prefill takes the whole target: more replicas do not make it faster.
    long = demand.model_copy(update={"prompt_tokens": 20_000.0})
    assert size(long, cap, ttft_s=3.0).terms["prefill"] == 0


def test_uncertainty_asks_for_more() -> None:
    cap = capacity(PROFILE, 0.1)
    assert (
        size(_demand(200, sd=60), cap, ttft_s=3.0).need > size(_demand(200), cap, ttft_s=3.0).need
    )


@given(st.floats(min_value=0, max_value=5000), st.floats(min_value=0, max_value=500))
def test_the_replicas_asked_hold_the_forecast(mean: float, sd: float) -> None:
    cap = capacity(PROFILE, 0.1)
    got = size(_demand(mean, sd), cap, ttft_s=3.0)
    assert got.need * cap.slots >= mean + 1.64 * sd - 1e-9
    assert got.need == max(got.terms.values())


def test_one_fewer_only_after_the_keep_time_and_never_on_one_reading() -> None:
    needs = [(t, 2) for t in range(0, 200, 15)]
    assert release_to(needs, 3, now=195, keep=180) == 2
    assert release_to(needs, 3, now=195, keep=300) is None  # not unneeded for long enough
    assert release_to([*needs, (210, 3)], 3, now=210, keep=180) is None  # asked again
    assert release_to(needs, 2, now=195, keep=180) is None  # 2 -> 1 only when 1 covers it


def test_one_fewer_waits_out_the_workloads_usual_dip() -> None:
    """A dip below N as short as the workload's usual ones ends before a reload pays: one
    fewer waits a quarter longer than its 95th percentile (or the keep time, if longer)."""
    # Asks of 2 with dips to 1 of 60 s and 120 s, then a dip going on since t=600.
    needs = [
        (t, 1 if 100 <= t < 160 or 300 <= t < 420 or t >= 600 else 2) for t in range(0, 900, 15)
    ]
    assert dips(needs, 2) == [60, 120]
    wait = release_after(needs, 2, keep=90.0)
    assert 1.25 * 60 < wait <= 1.25 * 120
    assert release_to(needs, 2, now=600 + 90, keep=wait) is None  # the keep time alone: too soon
    assert release_to(needs, 2, now=600 + 150, keep=wait) == 1
    assert release_after(needs, 3, keep=90.0) == 90.0  # never asked for 3: no dip below it
    assert release_after([(t, 2) for t in range(0, 300, 15)], 2, keep=90.0) == 90.0


def test_zero_waits_for_the_workloads_own_idle_gaps() -> None:
    assert not quiet_enough(200.0, keep=180.0, usual_gap_s=400.0)
    assert not quiet_enough(401.0, keep=180.0, usual_gap_s=400.0)  # the gap, no margin yet
    assert quiet_enough(501.0, keep=180.0, usual_gap_s=400.0)
    assert quiet_enough(181.0, keep=180.0, usual_gap_s=0.0)
    assert not quiet_enough(None, keep=0.0, usual_gap_s=0.0)


def test_idle_gaps_are_learned_and_a_workload_never_busy_is_quiet_since_watching() -> None:
    from agent.capacity.windows import Quiet, seen

    quiet = Quiet()
    for t, busy in [(0, False), (15, True), (30, True), (330, True), (345, True), (645, True)]:
        quiet = seen(quiet, busy, float(t), min_gap_s=20.0)
    assert quiet.gaps_s == (300.0, 300.0)  # two quiet spells of five minutes
    assert quiet.usual_gap(0.95) == 300.0
    never = seen(Quiet(), False, 100.0)
    assert never.quiet_for(400.0) == 300.0
