"""Figures over seeds: the mean and its 95 % bootstrap interval (percentile method)."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

DRAWS = 2000
LEVEL = 0.95


def mean_ci(values: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high) of `values`; with one value the interval is that value."""
    if not values:
        raise ValueError("no values to summarise")
    mean = statistics.fmean(values)
    if len(values) == 1:
        return mean, mean, mean
    rng = random.Random(seed)
    n = len(values)
    means = sorted(statistics.fmean(rng.choices(values, k=n)) for _ in range(DRAWS))
    tail = (1 - LEVEL) / 2
    low = means[int(tail * DRAWS)]
    high = means[min(DRAWS - 1, int((1 - tail) * DRAWS))]
    return mean, low, high
