"""The simulator's pacer: simulated seconds as datetimes, paced against the wall clock or not.

`speed` 0 runs as fast as the CPU allows (tests, benchmarks, evals); 1 is real time (a demo of
`steward run` on the embedded cluster); 60 is a minute per second. Pacing keeps a wall-clock
anchor, so sleeping never drifts however many steps a run takes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta


class Pacer:
    """Maps simulated seconds since `start` to datetimes, and paces them if `speed` > 0."""

    def __init__(
        self,
        start: datetime,
        speed: float = 0.0,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if speed < 0:
            raise ValueError(f"clock speed must be >= 0 (0 = as fast as possible), got {speed}")
        self.start = start
        self.speed = speed
        self._sleep = sleep
        self._monotonic = monotonic
        self._anchor: tuple[float, float] | None = None
        """(wall time, simulated time) when pacing began."""

    def at(self, t: float) -> datetime:
        return self.start + timedelta(seconds=t)

    def pace(self, t: float) -> None:
        """Wait until the wall clock has caught up with simulated time `t` (speed > 0 only)."""
        if self.speed <= 0:
            return
        if self._anchor is None:
            self._anchor = (self._monotonic(), t)
            return
        wall0, sim0 = self._anchor
        delay = wall0 + (t - sim0) / self.speed - self._monotonic()
        if delay > 0:
            self._sleep(delay)
