"""The virtual clock: as fast as possible at speed 0, paced against the wall clock otherwise."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lab.sim.backend import SimCluster
from lab.sim.clock import Pacer
from lab.sim.scenario import Scenario


class FakeWall:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_speed_zero_never_sleeps() -> None:
    wall = FakeWall()
    sim = SimCluster(Scenario(speed=0), sleep=wall.sleep)
    sim.advance(600)
    assert wall.slept == []
    assert (sim.now - sim.scenario.start).total_seconds() == 600


def test_real_time_sleeps_as_long_as_simulated() -> None:
    wall = FakeWall()
    clock = Pacer(datetime(2026, 1, 1, tzinfo=UTC), 1.0, wall.sleep, wall.monotonic)
    for t in (0.0, 0.5, 1.0, 1.5, 2.0):
        clock.pace(t)
    assert sum(wall.slept) == pytest.approx(2.0)


def test_pacing_does_not_drift_when_steps_take_time() -> None:
    wall = FakeWall()
    clock = Pacer(datetime(2026, 1, 1, tzinfo=UTC), 60.0, wall.sleep, wall.monotonic)
    clock.pace(0.0)
    for t in range(60, 601, 60):
        wall.now += 0.25  # the step itself took a quarter second
        clock.pace(float(t))
    assert wall.now - 100.0 == pytest.approx(10.0)  # ten simulated minutes at 60x


def test_negative_speed_is_refused() -> None:
    with pytest.raises(ValueError, match="speed"):
        Pacer(datetime(2026, 1, 1, tzinfo=UTC), -1.0)
