"""Every baseline's knob moves its GPU-hours on a fleet hour: a knob that changes nothing is a
broken baseline (the HPA read utilization in percent against a 0-1 target and went to its maximum
whatever the knob), and its tuned figures would mean nothing."""

from __future__ import annotations

import pytest

from lab.bench.trace.base import Entry
from lab.bench.trace.replay import Prepared, replay
from lab.bench.trace.tuning import entries
from tests.bench.conftest import prepared

FAMILIES = ("keda", "hpa", "dynamo", "rayserve", "aibrix")


@pytest.fixture(scope="module")
def fleet_hour() -> Prepared:
    return prepared("azure-conv", 3600, fleet=(16, 8))


def _ends(prep: Prepared, family: str) -> tuple[Entry, Entry]:
    grid = entries(prep, family)
    return grid[0], grid[-1]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_the_knob_changes_the_gpu_hours(fleet_hour: Prepared, family: str) -> None:
    low, high = _ends(fleet_hour, family)
    a, b = replay(fleet_hour, low).figures, replay(fleet_hour, high).figures
    assert abs(a.gpu_hours - b.gpu_hours) > 0.02 * max(a.gpu_hours, b.gpu_hours), (
        f"{family}: {low.knob} and {high.knob} both hold {a.gpu_hours} / {b.gpu_hours} GPU-h"
    )
