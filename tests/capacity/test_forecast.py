"""Holt's forecast: it follows a ramp, widens with the horizon, and settles on a flat load."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.capacity.forecast import Holt, ahead, update


def _fed(values: list[float], step: float = 15.0) -> Holt:
    state: Holt | None = None
    for i, v in enumerate(values):
        state = update(state, v, 1000.0 + i * step)
    assert state is not None
    return state


def test_a_ramp_is_forecast_ahead_of_the_last_reading() -> None:
    state = _fed([10.0 + 2.0 * i for i in range(20)])  # +2 per 15 s tick
    last = 10.0 + 2.0 * 19
    got = ahead(state, 105.0)
    assert got.mean > last + 7  # seven ticks ahead: +14 straight, less when damped
    assert got.mean < last + 14.0 + 1e-9  # damped: never beyond the straight line


def test_a_flat_load_is_forecast_flat_with_little_spread() -> None:
    state = _fed([30.0] * 30)
    got = ahead(state, 135.0)
    assert abs(got.mean - 30.0) < 1e-6
    assert got.sd < 1e-6


def test_the_spread_widens_with_the_horizon() -> None:
    state = _fed([5.0, 9.0, 4.0, 12.0, 6.0, 10.0, 3.0, 11.0])
    assert ahead(state, 15.0).sd < ahead(state, 150.0).sd


def test_a_repeated_reading_changes_nothing() -> None:
    state = _fed([1.0, 2.0, 3.0])
    assert update(state, 99.0, state.at) == state


@given(st.lists(st.floats(min_value=0, max_value=1e5), min_size=1, max_size=60))
def test_the_forecast_is_never_negative_and_its_spread_is_finite(values: list[float]) -> None:
    state = _fed(values)
    for horizon in (0.0, 15.0, 105.0, 600.0):
        got = ahead(state, horizon)
        assert got.mean >= 0.0
        assert 0.0 <= got.sd < float("inf")


@given(
    st.floats(min_value=0, max_value=1e4),
    st.floats(min_value=0.1, max_value=50),
    st.integers(min_value=3, max_value=40),
)
def test_a_rising_load_is_never_forecast_below_its_level(start: float, rise: float, n: int) -> None:
    state = _fed([start + rise * i for i in range(n)])
    assert ahead(state, 120.0).mean >= state.level


def test_a_forecast_that_missed_bursts_is_widened_by_its_record() -> None:
    from agent.capacity.forecast import Forecast, Misses, came, expect, widened

    misses = Misses()
    for i in range(20):
        misses = expect(misses, due=100.0 + i, mean=100.0)
        # every fifth forecast saw twice what it said (a burst), the rest what it said
        misses = came(misses, 200.0 if i % 5 == 0 else 100.0, at=100.0 + i)
    got = widened(Forecast(mean=100.0, sd=1.0, horizon_s=120), misses, z=1.64)
    assert got.upper(1.64) >= 199.0
    calm = Misses(ratios=(0.0,) * 20)
    assert widened(Forecast(mean=100.0, sd=1.0, horizon_s=120), calm, z=1.64).sd == 1.0
