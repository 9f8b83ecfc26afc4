"""Demand generators: rates as specified, the trace's own arrival times, the ServeGen shape."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lab.sim.demand import (
    BurstDemand,
    DiurnalDemand,
    Generator,
    PoissonDemand,
    RatesDemand,
    TraceDemand,
    load_trace,
)
from tests.sim.conftest import TRACES

MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC)


def arrivals(gen: Generator, t0: float, t1: float, step: float = 1.0) -> int:
    total, t = 0, t0
    while t < t1:
        total += sum(r.count for r in gen.window(t, t + step))
        t += step
    return total


def test_poisson_rate() -> None:
    gen = Generator(PoissonDemand(target="gx10", rate_per_min=30), seed=1, start=MIDNIGHT)
    assert arrivals(gen, 0, 3600) == pytest.approx(30 * 60, rel=0.08)


def test_diurnal_follows_the_day() -> None:
    spec = DiurnalDemand(target="gx10", min_rate_per_min=1, max_rate_per_min=30, trough_hour=4)
    gen = Generator(spec, seed=2, start=MIDNIGHT)
    night = arrivals(gen, 3 * 3600, 5 * 3600, 10)
    gen = Generator(spec, seed=2, start=MIDNIGHT)
    afternoon = arrivals(gen, 15 * 3600, 17 * 3600, 10)
    assert afternoon > 10 * night


def test_burst_only_inside_its_window() -> None:
    gen = Generator(
        BurstDemand(target="tts", rate_per_min=600, at_s=100, duration_s=50), seed=3, start=MIDNIGHT
    )
    assert arrivals(gen, 0, 100) == 0
    assert arrivals(gen, 100, 150) == pytest.approx(500, rel=0.2)
    assert arrivals(gen, 150, 400) == 0


def test_trace_replays_its_own_arrivals_and_sizes() -> None:
    path = TRACES / "azure-2023-conv.csv"
    rows = load_trace(path)
    gen = Generator(TraceDemand(target="gx10", path=path), seed=4, start=MIDNIGHT)
    first = gen.window(0, 60)
    expected = [r for r in rows if r[0] < 60]
    assert [(r.input_tokens, r.output_tokens) for r in first] == [(i, o) for _, i, o in expected]
    assert all(r.arrival_s == at for r, (at, _, _) in zip(first, expected, strict=True))


def test_trace_rate_scale_thins_it() -> None:
    path = TRACES / "azure-2023-conv.csv"
    full = len([r for r in load_trace(path) if r[0] < 600])
    gen = Generator(TraceDemand(target="gx10", path=path, rate_scale=0.1), seed=5, start=MIDNIGHT)
    assert arrivals(gen, 0, 600, 10) == pytest.approx(full * 0.1, rel=0.2)


def test_rates_follow_the_servegen_shape(tmp_path: Path) -> None:
    rates = tmp_path / "rates.csv"
    rates.write_text("window_start_s,svc,other\n0,60,1\n600,600,\n1200,0,\n")
    spec = RatesDemand(target="gx10", path=rates, column="svc", rate_scale=0.5, loop=False)
    gen = Generator(spec, seed=6, start=MIDNIGHT)
    quiet, busy, empty = (arrivals(gen, a, a + 600, 5) for a in (0, 600, 1200))
    assert quiet == pytest.approx(300, rel=0.2)
    assert busy == pytest.approx(3000, rel=0.1)
    assert empty == 0
    assert arrivals(gen, 1800, 2400, 5) == 0  # past the end, no loop


def test_fleet_rates_come_as_cohorts() -> None:
    spec = PoissonDemand(target="llm", rate_per_min=60_000)
    gen = Generator(spec, seed=7, start=MIDNIGHT)
    window = gen.window(0, 1)
    count = sum(r.count for r in window)
    assert count == pytest.approx(1000, rel=0.15)
    assert len({r.arrival_s for r in window}) == 1  # one arrival time: a cohort
    # Its answers are not all alike (alike requests admitted together finish together, and a
    # least-loaded router refills their replica with a cohort's worth of prompts at once): four
    # lengths, from a fifth of the mean to over twice it, averaging the mean.
    lengths = sorted(r.output_tokens for r in window)
    assert len(lengths) == 4
    assert lengths[0] < spec.output_tokens / 4 and lengths[-1] > 2 * spec.output_tokens
    mean = sum(r.output_tokens * r.count for r in window) / count
    assert mean == pytest.approx(spec.output_tokens, rel=0.02)
