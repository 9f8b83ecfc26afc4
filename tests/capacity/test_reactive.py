"""The reactive layer (agent.capacity.reactive): readings no forecast saw add replicas at once,
each threshold from the policy's `reactive` keys, and an over-full batch is spread at the
largest batch that meets the ITL target."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.capacity.reactive import Readings, Thresholds, itl_bounded, react
from agent.capacity.replica import capacity, itl_s, largest_batch
from tools.model import ServingProfile

LIMITS = Thresholds(ttft_s=3.0, itl_s=0.1)
PROFILE = ServingProfile(
    prefill_tok_s=4000, itl_base_s=0.0342, itl_per_seq_s=0.001533, max_num_seqs=256
)


def test_an_over_full_batch_is_spread_at_the_itl_bounded_batch() -> None:
    batch = largest_batch(PROFILE, 0.1)
    assert itl_s(PROFILE, batch) <= 0.1 < itl_s(PROFILE, batch + 1)
    # A flash crowd: 90 requests running on one replica whose ITL target holds 42 at most.
    why, need = react(Readings(ready=1, running=90, in_flight=90), LIMITS, lambda n: batch)
    assert need == 3  # 90 / 42 -> 3 replicas, each at or below the batch
    assert f"more than the {batch} per replica that meet the ITL target" in why


def test_a_batch_within_the_target_asks_nothing() -> None:
    assert react(Readings(ready=2, running=40, in_flight=40), LIMITS, lambda n: 42) == ("", 0)


def test_an_itl_reading_over_the_target_adds_one_replica_at_least() -> None:
    why, need = react(Readings(ready=2, running=10, itl_s=0.13), LIMITS, lambda n: 42)
    assert need == 3 and "ITL 130 ms over the 100 ms target" in why
    calmer = LIMITS.model_copy(update={"itl_share": 1.5})  # the policy's reactive.itl_share
    assert react(Readings(ready=2, running=10, itl_s=0.13), calmer, lambda n: 42) == ("", 0)


def test_each_threshold_is_the_policy_s() -> None:
    full = Readings(ready=2, kv_usage=0.85)
    assert react(full, LIMITS, lambda n: 42)[1] >= 3  # 2 x 0.85 / 0.7
    assert react(full, LIMITS.model_copy(update={"kv_usage": 0.9}), lambda n: 42) == ("", 0)
    slow = Readings(ready=1, ttft_s=1.8)
    assert react(slow, LIMITS, lambda n: 42)[1] == 2
    assert react(slow, LIMITS.model_copy(update={"ttft_share": 0.7}), lambda n: 42) == ("", 0)
    waits = Readings(ready=1, waiting=5, in_flight=10, waited_readings=2)
    assert react(waits, LIMITS, lambda n: 42)[1] == 2
    assert react(waits, LIMITS.model_copy(update={"waiting_readings": 3}), lambda n: 42) == (
        "",
        0,
    )


def test_nothing_ready_nothing_reacts() -> None:
    assert react(Readings(ready=0, running=50, kv_usage=1.0), LIMITS, lambda n: 1) == ("", 0)


def test_the_batch_grows_with_replicas_sharing_the_prefill() -> None:
    """One replica prefilling most of its time keeps few streams within the target; with the
    prefill shared, each keeps more: the replicas asked are the fewest whose own share holds."""

    def batch_at(n: int) -> int:
        return capacity(PROFILE, 0.1, prefill_share=3000 / (4000 * n)).slots

    assert batch_at(1) < batch_at(2) <= batch_at(3)
    need = itl_bounded(14, batch_at)
    assert need == 2 and need * batch_at(need) >= 14 and (need - 1) * batch_at(need - 1) < 14


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    running=st.floats(min_value=0, max_value=4000, allow_nan=False),  # within MOST_REPLICAS
    base=st.integers(min_value=1, max_value=300),
    gain=st.integers(min_value=0, max_value=50),
)
def test_itl_bounded_is_the_fewest_replicas_that_hold_the_batch(
    running: float, base: int, gain: int
) -> None:
    def batch_at(n: int) -> int:
        return base + gain * min(n, 8)  # grows with n, then stays

    n = itl_bounded(running, batch_at)
    if running <= 0:
        assert n == 0
        return
    assert running <= n * batch_at(n) + 1e-6
    assert n == 1 or running > (n - 1) * batch_at(n - 1)
