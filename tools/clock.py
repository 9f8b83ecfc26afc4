"""Where "now" comes from and how waiting is done: the `Clock` seam.

Everything that waits — a drain for its in-flight requests, a rotation for a model to load, a probe
between attempts — waits on a `Clock`. Against a real cluster it is the wall clock and waiting
sleeps; against the simulator waiting advances the simulator's virtual clock, so minutes of model
load take milliseconds and stay deterministic.

The daemon never lets a long action block its loop: it runs each decision as a `Suspendable` (see
tools/suspend.py), and a `LoopClock`'s `wait` inside one hands control back to the loop until the
time has come, instead of sleeping or advancing the world itself. The loop keeps ticking, other
pools keep being decided, and the long action goes on, step by step, on the ticks after.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Literal, Protocol

from tools import suspend


ClockKind = Literal["wall", "simulated"]


class Clock(Protocol):
    """Now (timezone-aware) and a way to let time pass; `kind` says whose time it is."""

    @property
    def kind(self) -> ClockKind: ...

    def now(self) -> datetime: ...

    def wait(self, seconds: float) -> None: ...


class WallClock:
    """Real time: for a real cluster."""

    kind: ClockKind = "wall"

    def now(self) -> datetime:
        return datetime.now(UTC)

    def wait(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class Advancing(Protocol):
    """Anything with a virtual clock that moves only when told (the simulator)."""

    @property
    def now(self) -> datetime: ...

    def advance(self, seconds: float) -> None: ...


class VirtualClock:
    """The simulator's clock: waiting advances simulated time (for one-shot commands and tests
    that drive a rotation themselves; the daemon uses a `LoopClock` over it)."""

    kind: ClockKind = "simulated"

    def __init__(self, world: Advancing) -> None:
        self._world = world

    def now(self) -> datetime:
        return self._world.now

    def wait(self, seconds: float) -> None:
        self._world.advance(max(0.0, seconds))


class LoopClock:
    """The daemon's clock: inside a suspendable decision, `wait` suspends it until `base` reaches
    the wake-up time (the loop resumes it on a later tick); anywhere else it waits on `base`."""

    def __init__(self, base: Clock) -> None:
        self.base = base

    @property
    def kind(self) -> ClockKind:
        return self.base.kind

    def now(self) -> datetime:
        return self.base.now()

    def wait(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        if not suspend.suspend_until(self.base.now().timestamp() + seconds):
            self.base.wait(seconds)
