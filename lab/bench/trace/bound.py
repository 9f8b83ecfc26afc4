"""The certified bound: the fewest GPU-hours a replica schedule needs to meet the SLO, offline.

With the whole load known in advance (its expected demand per 10 s bucket), the simulator's true
speeds (the hidden capacity factors included) and the model load time, an offline planner picks
a replica count per workload for every 15 s step:
- the demand of a bucket is the replica-seconds of service its arrivals take at the true speeds,
  per second; it is averaged over a window of `smoothing_s` around the bucket (a queue absorbs
  a burst shorter than the window: 0 follows every bucket, an infinite window holds the whole
  run's mean, a constant schedule); the need of a step is the most its buckets need at a planned
  utilization `u` (the averaged demand over `u`);
- given the need, the cheapest schedule is found by dynamic programming over each replica
  "level" independently (replicas are interchangeable): a level held where the need reaches it,
  bridged across a gap when holding it is cheaper than unloading and loading again (a gap no
  longer than a load), started one load (with a margin for slow loads) before it is needed, and
  free at the start when it is needed within the first load (every replay starts warm);
- `u` runs over a grid (HIGH_U down to LOW_U in GRID steps); for each window of SMOOTHING_S
  the grid is bisected for the highest `u` whose schedule, replayed in the simulator with the
  same seed as the controllers, reaches the attainment target: the replay certifies it (a
  schedule already replayed is not replayed again: a replay depends on the schedule and the
  seed alone). The windows are searched one after another, each only among the schedules that
  plan fewer GPU-hours than the cheapest certified so far, the costliest of those first: when
  it fails the window is done in one replay. The bisection stops once the cheapest schedule left
  untried would save less than TOLERANCE. The bound is the cheapest certified schedule over
  every window and every `u` tried.

What it bounds: schedules of this family, planned with the future known. It is the cheapest
schedule the search certifies, not a proof that none cheaper exists: `beaten` (and the bench's
`bound.beaten_by`) names every controller run that met the target on fewer GPU-hours than the
bound on the same seed, and the bench reports it rather than hiding it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from lab.bench.trace.base import Baseline, Entry, Target, World, set_replicas, workload
from lab.bench.trace.load import Timeline
from lab.bench.trace.replay import Outcome, Prepared, replay

STEP_S = 15.0
LOAD_MARGIN = 1.3
"""Loads are planned this much longer than the profile says (they vary; some fail)."""
LOW_U, HIGH_U = 0.2, 1.0
GRID = 256
"""Planned utilizations searched: HIGH_U down to LOW_U in GRID steps (0.003125 apart)."""
TOLERANCE = 0.003
"""A search stops once the cheapest schedule left to try would save less than this share."""
SMOOTHING_S = (math.inf, 600.0, 60.0, 0.0)
"""Windows the demand is averaged over before the need is taken (inf: the whole run's mean),
in the order they are searched: the whole run's mean plans the fewest distinct schedules."""


def demand(prep: Prepared, target: Target, smoothing_s: float = 0.0) -> list[float]:
    """Replicas of `target` busy each bucket at its true speed, averaged over `smoothing_s`
    around the bucket (over the window and the tail)."""
    timeline: Timeline = prep.timelines[target.pool]
    speed = prep.capacity.get(target.name, 1.0)
    busy = []
    for i in range(len(timeline.requests)):
        if prep.jobs:
            work = timeline.work_s[i]
        else:
            work = target.service_s(timeline.input_tokens[i], timeline.output_tokens[i]) / speed
        busy.append(work / target.pool_size / timeline.bucket_s)
    if smoothing_s <= 0 or not busy:
        return busy
    if math.isinf(smoothing_s):
        mean = sum(busy) / len(busy)
        return [mean] * len(busy)
    half = round(smoothing_s / timeline.bucket_s / 2)
    sums = [0.0]
    for x in busy:
        sums.append(sums[-1] + x)
    out = []
    for i in range(len(busy)):
        lo, hi = max(0, i - half), min(len(busy), i + half + 1)
        out.append((sums[hi] - sums[lo]) / (hi - lo))
    return out


def need(prep: Prepared, target: Target, utilization: float, smoothing_s: float = 0.0) -> list[int]:
    """Replicas of `target` each 15 s step needs (over the window and the tail)."""
    timeline: Timeline = prep.timelines[target.pool]
    per_bucket = [
        math.ceil(d / utilization - 1e-9) if n > 0 or d > 0 else 0
        for d, n in zip(demand(prep, target, smoothing_s), timeline.requests, strict=True)
    ]
    steps = math.ceil(timeline.span_s / STEP_S)
    out = []
    for k in range(steps):
        first = int(k * STEP_S // timeline.bucket_s)
        last = int(((k + 1) * STEP_S - 1e-9) // timeline.bucket_s)
        out.append(max(per_bucket[first : last + 1], default=0))
    return [min(target.max_replicas, x) for x in out]


def schedule(needs: list[int], load_steps: int) -> list[int]:
    """The cheapest held-replica count per step that has `needs[k]` ready at every step k."""
    held = [0] * len(needs)
    warm = max(needs[: load_steps + 1], default=0)
    for level in range(1, max(needs, default=0) + 1):
        steps = [k for k, x in enumerate(needs) if x >= level]
        runs: list[list[int]] = []
        for k in steps:
            if runs and k == runs[-1][1] + 1:
                runs[-1][1] = k
            else:
                runs.append([k, k])
        start = 0 if level <= warm else max(0, runs[0][0] - load_steps)
        end = runs[0][1]
        for first, last in runs[1:]:
            if first - end - 1 <= load_steps:  # holding through the gap costs no more
                end = last
                continue
            for k in range(start, end + 1):
                held[k] += 1
            start, end = max(0, first - load_steps), last
        for k in range(start, end + 1):
            held[k] += 1
    return held


class Scheduled(Baseline):
    """Plays a precomputed schedule: replicas per 15 s step for each workload."""

    name = "bound"
    interval_s = 5.0

    def __init__(self, plans: dict[str, list[int]]) -> None:
        self.plans = plans
        self.wanted: dict[str, int] = {}
        """Per workload, the count it last asked for and got: nothing else scales a workload
        in a replay, so the schedule needs no observation of the cluster but the first."""

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        return self.plans[target.name][0] if self.plans[target.name] else 0

    def decide(self, world: World) -> None:
        if not self.wanted:
            state = world.cluster.observe()
            self.wanted = {t.name: workload(state, t.name).desired_replicas for t in world.targets}
        for t in world.targets:
            plan = self.plans[t.name]
            k = min(len(plan) - 1, int(world.elapsed_s // STEP_S))
            self.wanted[t.name] = set_replicas(world.cluster, t, plan[k], self.wanted[t.name])


def plans(prep: Prepared, utilization: float, smoothing_s: float = 0.0) -> dict[str, list[int]]:
    out = {}
    for t in prep.targets:
        load_steps = math.ceil(t.load_s * LOAD_MARGIN / STEP_S)
        out[t.name] = schedule(need(prep, t, utilization, smoothing_s), load_steps)
    return out


@dataclass(frozen=True, slots=True)
class Bound:
    outcome: Outcome
    utilization: float
    certified: bool
    """Its replay reached the target attainment."""
    smoothing_s: float = 0.0
    tried: int = 1
    """Schedules replayed in the search that found it."""


Key = tuple[tuple[str, tuple[int, ...]], ...]


def bound(prep: Prepared, target: float, progress: Callable[[str], None] | None = None) -> Bound:
    """The cheapest certified schedule over every smoothing window and planned utilization
    tried; with none certified, the one closest to the target (marked uncertified).

    The windows are searched one after another, each only below the planned GPU-hours of the
    cheapest schedule certified so far: a window whose schedule just below it fails is done in
    one replay (more capacity certifies more, so nothing cheaper in it can certify)."""
    replayed: dict[Key, Outcome] = {}
    tried: list[Bound] = []
    best: float | None = None
    for window in SMOOTHING_S:
        found = search(prep, target, window, progress, below=best, replayed=replayed)
        tried += found
        for b in found:
            if b.certified:
                cost = planned_gpu_hours(prep, plans(prep, b.utilization, window))
                best = cost if best is None else min(best, cost)
    return cheapest(tried)


def cheapest(tried: Sequence[Bound]) -> Bound:
    """The bound among the schedules a search replayed (those of every window)."""
    certified = [b for b in tried if b.certified]
    if certified:
        best = min(certified, key=lambda b: (b.outcome.figures.gpu_hours, -b.utilization))
    else:
        best = max(tried, key=lambda b: b.outcome.figures.slo_attainment)
    return Bound(best.outcome, best.utilization, best.certified, best.smoothing_s, len(tried))


def utilization(i: int) -> float:
    """The planned utilization of grid point `i` (0: HIGH_U, the least capacity; GRID: LOW_U)."""
    return HIGH_U - (HIGH_U - LOW_U) * i / GRID


def planned_gpu_hours(prep: Prepared, planned: dict[str, list[int]]) -> float:
    """The GPU-hours a schedule holds over the scored window (the tail is not scored)."""
    steps = math.ceil(prep.setup.duration_s / STEP_S - 1e-9)
    cards = {t.name: t.cards_per_replica for t in prep.targets}
    held = sum(cards[name] * sum(counts[:steps]) for name, counts in planned.items())
    return held * STEP_S / 3600


def search(
    prep: Prepared,
    target: float,
    smoothing_s: float,
    progress: Callable[[str], None] | None = None,
    *,
    below: float | None = None,
    replayed: dict[Key, Outcome] | None = None,
) -> list[Bound]:
    """Every schedule replayed while bisecting `u` on a grid for one smoothing window.

    More capacity (a lower `u`) is taken to certify no less: the search keeps an uncertified
    grid point and a certified one and halves the points between them, until they are
    neighbours or the cheapest schedule left to try saves less than TOLERANCE of the certified
    one. With `below` (the planned GPU-hours of a schedule another window certified), only the
    schedules planning fewer are searched, and the costliest of them is replayed first: if it
    fails, nothing cheaper in this window can certify."""
    replayed = {} if replayed is None else replayed
    """Outcomes by schedule: two values of `u` that plan the same replica counts replay alike
    (a replay depends on nothing else), so the second is not run again."""
    planned_at: dict[int, dict[str, list[int]]] = {}

    def planned(i: int) -> dict[str, list[int]]:
        if i not in planned_at:
            planned_at[i] = plans(prep, utilization(i), smoothing_s)
        return planned_at[i]

    def cost(i: int) -> float:
        return planned_gpu_hours(prep, planned(i))

    def run(i: int) -> Bound:
        u = utilization(i)
        if progress is not None:
            progress(f"bound: seed {prep.setup.seed}, smoothing {smoothing_s:g} s, u={u:.4g}")
        knob = f"utilization={u:.4g} smoothing_s={smoothing_s:g}"
        key = tuple((name, tuple(counts)) for name, counts in sorted(planned(i).items()))
        o = replayed.get(key)
        if o is None:
            controller = Scheduled(planned(i))
            entry = Entry("bound", knob, lambda sim, d: controller, controller.initial)
            o = replayed[key] = replay(prep, entry)
        else:
            o = replace(o, knob=knob)
        return Bound(o, u, o.figures.slo_attainment >= target, smoothing_s)

    top = GRID
    if below is not None:  # the most capacity planning fewer GPU-hours than `below`
        if cost(0) >= below - 1e-9:
            return []
        lo, hi = 0, GRID
        if cost(GRID) >= below - 1e-9:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if cost(mid) < below - 1e-9 else (lo, mid)
            top = lo
    out: list[Bound] = []
    if below is None:  # the least capacity this window plans: nothing cheaper to look for
        first = run(0)
        out.append(first)
        if first.certified:
            return out
    last = run(top)
    out.append(last)
    if not last.certified:
        return out
    lo, hi = (0 if below is None else -1), top
    while hi - lo > 1 and (lo < 0 or cost(lo + 1) < cost(hi) * (1 - TOLERANCE)):
        mid = (lo + hi) // 2
        b = run(mid)
        out.append(b)
        lo, hi = (lo, mid) if b.certified else (mid, hi)
    return out


@dataclass(frozen=True, slots=True)
class Beaten:
    """A controller run that met the target on fewer GPU-hours than the bound of its seed."""

    controller: str
    seed: int
    gpu_hours: float
    bound_gpu_hours: float


def beaten_by(
    bounds: Sequence[Bound],
    runs: dict[str, list[Outcome]],
    seeds: Sequence[int],
    target: float,
) -> list[Beaten]:
    """The certificate check: every run (one per seed, in the order of `bounds`) that reached
    `target` on fewer GPU-hours than its seed's certified bound. Empty: the bound holds."""
    out = []
    for name, outcomes in runs.items():
        for b, o, seed in zip(bounds, outcomes, seeds, strict=True):
            f, least = o.figures, b.outcome.figures.gpu_hours
            if b.certified and f.slo_attainment >= target and f.gpu_hours < least - 1e-9:
                out.append(Beaten(name, seed, f.gpu_hours, least))
    return out
