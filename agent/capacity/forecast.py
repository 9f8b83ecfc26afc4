"""Holt's linear trend (double exponential smoothing) over irregular ticks, with uncertainty.

The trend is damped (Gardner & McKenzie's damped trend, phi per usual tick): a ramp is followed,
but a burst's slope is not extrapolated a whole model load ahead at full strength. The level
and the trend (per second) are corrected by each new reading's one-step error; the
spread of those errors (an exponentially weighted mean of their squares) gives the forecast's
standard deviation, widened over the horizon as Holt's method widens it: after k steps of the
usual tick, var_k = s^2 x (1 + sum_{j<k} (alpha + alpha x beta x j)^2) (Hyndman & Athanasopoulos,
*Forecasting: principles and practice*, table 8.8, ETS(A,A,N)).

One model load plus one tick is the horizon that matters: a replica asked for now serves only
after its load, and the next chance to ask again is one tick later.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

ALPHA = 0.5
"""Weight of a new reading in the level: a tick's reading is already a scrape's mean."""
BETA = 0.3
"""Weight of a new slope in the trend."""
SPREAD_WEIGHT = 0.2
"""Weight of a new squared error in the error spread (about the last five ticks)."""
DAMPING = 0.9
"""phi: the share of the trend kept per usual tick ahead."""
MAX_STEPS = 64
"""The widening of the spread is counted over at most this many ticks ahead."""


class Holt(BaseModel):
    """The smoother's state after the readings it has seen."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: float
    trend_per_s: float = 0.0
    spread: float = 0.0
    """Exponentially weighted mean of the squared one-step errors."""
    at: float
    """POSIX time of the last reading."""
    step_s: float = Field(default=15.0, gt=0)
    """Exponentially weighted mean of the time between readings."""
    readings: int = 1


class Forecast(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mean: float
    sd: float
    horizon_s: float

    def upper(self, z: float) -> float:
        """The mean plus `z` standard deviations (z = 1.64: the 95th percentile)."""
        return self.mean + z * self.sd


def update(state: Holt | None, value: float, at: float) -> Holt:
    """The state after one more reading `value` taken at POSIX time `at`."""
    if state is None:
        return Holt(level=value, at=at)
    dt = at - state.at
    if dt <= 0:
        return state  # the same reading again (a repeated tick): nothing new
    predicted = state.level + state.trend_per_s * dt
    error = value - predicted
    level = predicted + ALPHA * error
    trend = state.trend_per_s + ALPHA * BETA * error / dt
    spread = error * error if state.readings < 2 else state.spread
    spread = (1 - SPREAD_WEIGHT) * spread + SPREAD_WEIGHT * error * error
    step = state.step_s + 0.2 * (min(dt, 10 * state.step_s) - state.step_s)
    return Holt(
        level=level,
        trend_per_s=trend,
        spread=spread,
        at=at,
        step_s=step,
        readings=state.readings + 1,
    )


def ahead(state: Holt, horizon_s: float) -> Forecast:
    """What the readings will be `horizon_s` from the last one (the mean never below 0)."""
    horizon_s = max(0.0, horizon_s)
    steps = min(MAX_STEPS, max(1, math.ceil(horizon_s / state.step_s)))
    # sum_{k=1..steps} phi^k usual ticks of trend, each tick step_s long (scaled to the horizon)
    damped = DAMPING * (1 - DAMPING**steps) / (1 - DAMPING) / steps
    mean = max(0.0, state.level + state.trend_per_s * horizon_s * damped)
    widen = 1.0 + sum((ALPHA + ALPHA * BETA * j) ** 2 for j in range(1, steps))
    return Forecast(mean=mean, sd=math.sqrt(state.spread * widen), horizon_s=horizon_s)


MISSES_KEPT = 60
"""Horizon-ahead errors kept (about fifteen minutes at a 15 s tick)."""
MIN_MISSES = 8
"""Errors needed before they widen the forecast."""


class Misses(BaseModel):
    """How far the forecasts made one horizon ago fell short of what came: the forecast's own
    record over the horizon that matters, not the model's (a burst of a minute is not in the
    one-step errors of a smoothed series)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pending: tuple[tuple[float, float], ...] = ()
    """(POSIX time due, mean forecast) of forecasts not yet due, oldest first."""
    ratios: tuple[float, ...] = ()
    """What came over what was forecast, minus one, for the forecasts that fell due."""


def expect(misses: Misses, due: float, mean: float) -> Misses:
    """`misses` with one more forecast to check when it falls due."""
    pending = (*misses.pending, (due, mean))[-MISSES_KEPT:]
    return misses.model_copy(update={"pending": pending})


def came(misses: Misses, value: float, at: float, floor: float = 1.0) -> Misses:
    """`misses` after a reading `value` at `at`: the forecasts due by then are scored (those
    of less than `floor` are too small to give a ratio)."""
    due = [m for t, m in misses.pending if t <= at]
    if not due:
        return misses
    ratios = (*misses.ratios, *(value / m - 1.0 for m in due if m >= floor))[-MISSES_KEPT:]
    pending = tuple((t, m) for t, m in misses.pending if t > at)
    return Misses(pending=pending, ratios=ratios)


def widened(got: Forecast, misses: Misses, z: float, q: float = 0.95) -> Forecast:
    """`got` with a spread at least as wide as its record says: its high end (mean + z sd) no
    lower than the mean times the `q` percentile of what came over what was forecast."""
    if len(misses.ratios) < MIN_MISSES:
        return got
    ordered = sorted(misses.ratios)
    short = ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
    sd = max(got.sd, got.mean * max(0.0, short) / z)
    return got.model_copy(update={"sd": sd})
