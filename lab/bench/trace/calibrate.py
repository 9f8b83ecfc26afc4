"""The default rate scale: a load the driven pool can carry when it is all held, no more.

Sizing by the busiest minute (80 % of the pool, load.PEAK_LOAD) is not enough for bursty traces:
within a minute, the Azure code trace's bursts exceed what the whole pool serves within the
target, and then no controller can meet it — the comparison would say nothing. So, unless
`--rate-scale` is given, the minute-based scale is lowered (bisection, seven runs at most) to the
highest at which the whole pool, held all the time (`static` at its maximum), still reaches the
attainment it reaches almost empty (1/128 of the load: what request sizes alone allow; a 30,000-
token prompt cannot meet a 3 s target however idle the pool) less half a point. These runs only
fix the load, the same for every controller; they are not among the results. They run on the
training split, at the slowest capacity a seed may draw (the profile's speeds x 0.85), and the
scale found is carried to every test seed.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from lab.bench.trace.base import Entry
from lab.bench.trace.parallel import run_all
from lab.bench.trace.replay import CAPACITY_SPREAD, Prepared, replay, rescaled
from lab.bench.trace.static import Static

SLACK = 0.005
STEPS = 7
ALL_OF_IT = 1_000_000
"""Replicas asked of `static`: clamped to each workload's maximum, i.e. the whole pool."""


def _whole_pool() -> Entry:
    static = Static(replicas=ALL_OF_IT)
    return Entry("static", "replicas=max", lambda sim, data_dir: static, static.initial)


def calibrated(prep: Prepared, jobs: int = 1) -> Prepared:
    """`prep` at the calibrated rate scale; its first two runs (almost empty, as given) run
    `jobs` at once, the bisection after them one by one."""
    if prep.setup.rate_scale is not None:
        return prep
    full = _whole_pool()
    # At the slowest hidden capacity a test seed may draw: the whole pool must carry the load on
    # every seed, or the comparison says nothing (and the bound cannot be certified).
    spread = CAPACITY_SPREAD if prep.setup.perturb else 0.0
    slowest = replace(prep, capacity={n: 1.0 - spread for n in prep.capacity})

    def attainment(k: float) -> float:
        return replay(rescaled(slowest, k), full).figures.slo_attainment

    empty, given = run_all([partial(attainment, 1.0 / 2**STEPS), partial(attainment, 1.0)], jobs)
    floor = min(empty, 1.0) - SLACK
    if given >= floor:
        return prep
    lo, hi = 1.0 / 2**STEPS, 1.0
    for _ in range(STEPS):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if attainment(mid) >= floor else (lo, mid)
    return rescaled(prep, lo)  # with its own capacity factors again
