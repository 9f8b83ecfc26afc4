"""The rotation's clock: where "now" comes from and how waiting is done.

A rotation waits — for in-flight requests, for a model to load, between probe attempts. Against
a real cluster it sleeps; against the simulator it advances the simulator's virtual clock, so a
rotation with minutes of model load runs in milliseconds and stays deterministic.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    """Real time: for a real cluster."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class Advancing(Protocol):
    """Anything with a virtual clock that moves only when told (the simulator)."""

    @property
    def now(self) -> datetime: ...

    def advance(self, seconds: float) -> None: ...


class VirtualClock:
    """The simulator's clock: sleeping advances simulated time."""

    def __init__(self, world: Advancing) -> None:
        self._world = world

    def now(self) -> datetime:
        return self._world.now

    def sleep(self, seconds: float) -> None:
        self._world.advance(seconds)
