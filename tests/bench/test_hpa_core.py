"""The HPA algorithm KEDA and the HPA-style baseline share: tolerance, limits, stabilization."""

from __future__ import annotations

from lab.bench.trace.hpa import HpaCore


def test_within_the_tolerance_nothing_changes() -> None:
    core = HpaCore(min_replicas=1, max_replicas=100)
    assert core.desired(0.0, 10, 1.09) == 10
    assert core.desired(15.0, 10, 0.91) == 10


def test_scale_up_is_limited_to_four_pods_or_double_per_sync() -> None:
    assert HpaCore(1, 100).desired(0.0, 1, 10.0) == 5  # +4 beats x2 at one replica
    assert HpaCore(1, 100).desired(0.0, 10, 10.0) == 20  # x2 beats +4 at ten


def test_scale_down_waits_for_the_stabilization_window() -> None:
    core = HpaCore(1, 100)
    assert core.desired(0.0, 10, 0.2) == 10  # the count it was running at is remembered
    assert core.desired(150.0, 10, 0.2) == 10
    assert core.desired(301.0, 10, 0.2) == 2  # 300 s of low recommendations: down at once


def test_bounds_hold() -> None:
    core = HpaCore(2, 6)
    assert core.desired(0.0, 4, 10.0) == 6
    assert core.desired(0.0, 0, 10.0) == 0  # at zero the HPA is off (KEDA wakes it)
