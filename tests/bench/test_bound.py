"""The certified bound: its dynamic program, its certification by replay, and that no controller
reaches the target on fewer GPU-hours."""

from __future__ import annotations

import pytest

from lab.bench.trace.bound import bound, schedule
from lab.bench.trace.calibrate import calibrated
from lab.bench.trace.replay import replay, with_scales
from lab.bench.trace.run import TRAIN_SEED
from lab.bench.trace.tuning import TARGET_ATTAINMENT, entries
from tests.bench.conftest import prepared


def test_a_replica_starts_one_load_before_it_is_needed_and_leaves_after() -> None:
    needs = [0] * 10 + [1] * 3 + [0] * 10
    held = schedule(needs, load_steps=4)
    assert held == [0] * 6 + [1] * 7 + [0] * 10


def test_a_gap_shorter_than_a_load_is_held_through_and_a_longer_one_is_not() -> None:
    short = schedule([0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1], load_steps=3)
    assert short[4:8] == [1, 1, 1, 1]  # two idle steps cost less than a reload
    assert short[8:13] == [0] * 5 and short[13:17] == [1] * 4  # restarted a load ahead


def test_replicas_needed_within_the_first_load_are_warm_at_the_start() -> None:
    assert schedule([0, 2, 2, 0, 0, 0, 0, 0], load_steps=2)[0] == 2


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["sinusoid", "flash"])
def test_the_bound_is_certified_and_no_controller_meets_the_target_on_less(trace: str) -> None:
    # As `steward bench trace` does: the load calibrated on the training seed, then a test seed.
    train = calibrated(prepared(trace, 1200, seed=TRAIN_SEED))
    prep = with_scales(prepared(trace, 1200, seed=3), train.rate_scale)
    found = bound(prep, TARGET_ATTAINMENT)
    assert found.certified
    assert found.outcome.figures.slo_attainment >= TARGET_ATTAINMENT
    cheapest = found.outcome.figures.gpu_hours
    for family in ("static", "keda", "hpa", "dynamo", "rayserve", "aibrix"):
        for entry in entries(prep, family):
            f = replay(prep, entry).figures
            if f.slo_attainment >= TARGET_ATTAINMENT:
                assert f.gpu_hours >= cheapest - 1e-9, f"{family} {entry.knob}: {f.gpu_hours}"
