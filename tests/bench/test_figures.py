"""The referee's arithmetic: quantiles of weighted samples, reversals, decision times."""

from __future__ import annotations

from lab.bench.trace.figures import decision_ms, reversals, weighted_quantile


def test_weighted_quantile_counts_each_sample_as_many_times_as_its_weight() -> None:
    samples = [(1.0, 98), (10.0, 1), (100.0, 1)]
    assert weighted_quantile(samples, 0.5) == 1.0
    assert weighted_quantile(samples, 0.99) == 10.0
    assert weighted_quantile(samples, 1.0) == 100.0
    assert weighted_quantile([], 0.5) is None


def test_a_reversal_is_a_change_undone_within_ten_minutes() -> None:
    # up, down 5 min later (reversal), up 20 min later (not), down 1 min later (reversal)
    changes = [(0.0, 1), (300.0, -1), (1500.0, 1), (1560.0, -1)]
    assert reversals(changes) == 2
    assert reversals([(0.0, 1), (100.0, 1), (200.0, 1)]) == 0


def test_decision_times_median_and_p99() -> None:
    median, p99 = decision_ms([float(i) for i in range(1, 101)])
    assert median == 50.5
    assert p99 == 99.0
    assert decision_ms([]) == (0.0, 0.0)
