"""Offered work over short, medium and long windows, and how quiet gaps between arrivals last.

A window here is an exponentially weighted mean with a time constant (1 min, 5 min, 30 min), so
it needs no more memory than its value and is exact over irregular ticks. The short window's
high percentile comes from the last readings themselves (at most `RECENT`). Idle gaps — from the
last reading that saw work to the next one — are kept (at most `GAPS`) so that going to zero
waits for longer than the workload's own usual quiet spells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

SHORT_S = 60.0
MEDIUM_S = 300.0
LONG_S = 1800.0
RECENT = 20
"""Readings kept for the short window's high percentile (five minutes at a 15 s tick)."""
RECENT_S = 300.0
GAPS = 32
"""Idle gaps kept for their high percentile."""


class Windows(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    short: float
    medium: float
    long: float
    at: float
    recent: tuple[tuple[float, float], ...] = ()
    """(POSIX time, reading) of the last readings, oldest first."""

    def high(self, q: float = 0.9) -> float:
        """The `q` percentile of the recent readings (the short window's high end)."""
        return percentile([v for _, v in self.recent], q) if self.recent else self.short


def fold(state: Windows | None, value: float, at: float) -> Windows:
    """The windows after one more reading."""
    if state is None:
        return Windows(short=value, medium=value, long=value, at=at, recent=((at, value),))
    dt = at - state.at
    if dt <= 0:
        return state
    recent = tuple((t, v) for t, v in (*state.recent, (at, value)) if at - t <= RECENT_S)
    return Windows(
        short=_mix(state.short, value, dt, SHORT_S),
        medium=_mix(state.medium, value, dt, MEDIUM_S),
        long=_mix(state.long, value, dt, LONG_S),
        at=at,
        recent=recent[-RECENT:],
    )


def _mix(old: float, new: float, dt: float, tau: float) -> float:
    w = 1.0 - math.exp(-dt / tau)
    return old + w * (new - old)


def percentile(values: Sequence[float], q: float) -> float:
    """The `q` percentile (0..1) by linear interpolation between order statistics."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


class Quiet(BaseModel):
    """When work was last seen, and the idle gaps seen so far."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    last_work_at: float | None = None
    gaps_s: tuple[float, ...] = ()
    watching_since: float | None = None
    """The first reading: a workload never seen working has been quiet since then."""

    def quiet_for(self, now: float) -> float | None:
        """Seconds since work was last seen, or since watching began (None: neither)."""
        since = self.last_work_at if self.last_work_at is not None else self.watching_since
        return None if since is None else max(0.0, now - since)

    def usual_gap(self, q: float = 0.95) -> float:
        """The `q` percentile of the idle gaps seen (0 with none)."""
        return percentile(self.gaps_s, q) if self.gaps_s else 0.0


def seen(state: Quiet, busy: bool, now: float, min_gap_s: float = 0.0) -> Quiet:
    """`state` after a reading that saw work (`busy`) or none at `now`. A gap is recorded when
    work comes back after at least `min_gap_s` (a tick) without it."""
    if state.watching_since is None:
        state = state.model_copy(update={"watching_since": now})
    if not busy:
        return state
    gaps = state.gaps_s
    if state.last_work_at is not None:
        gap = now - state.last_work_at
        if gap > min_gap_s:
            gaps = (*gaps, gap)[-GAPS:]
    return Quiet(last_work_at=now, gaps_s=gaps, watching_since=state.watching_since)
