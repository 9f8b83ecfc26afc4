"""The certified bound: the fewest GPU-hours a replica schedule needs to meet the SLO, offline.

With the whole load known in advance (its expected demand per 10 s bucket), the simulator's true
speeds (the hidden capacity factors included) and the model load time, an offline planner picks
a replica count per workload for every 15 s step:
- the need of a step is the most any of its buckets needs: the replica-seconds of service its
  arrivals take at the true speeds, per second, over a planned utilization `u`;
- given the need, the cheapest schedule is found by dynamic programming over each replica
  "level" independently (replicas are interchangeable): a level held where the need reaches it,
  bridged across a gap when holding it is cheaper than unloading and loading again (a gap no
  longer than a load), started one load (with a margin for slow loads) before it is needed, and
  free at the start when it is needed within the first load (every replay starts warm);
- `u` is searched (bisection) for the highest value whose schedule, replayed in the simulator
  with the same seed as the controllers, reaches the attainment target: the replay certifies it.

What it bounds: schedules of this form, planned with the future known. A controller that beats it
at the target shows the search is not exhaustive, and the test that pins the bound looks for one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from lab.bench.trace.base import Baseline, Entry, Target, World, set_replicas, workload
from lab.bench.trace.load import Timeline
from lab.bench.trace.replay import Outcome, Prepared, replay

STEP_S = 15.0
LOAD_MARGIN = 1.3
"""Loads are planned this much longer than the profile says (they vary; some fail)."""
LOW_U, HIGH_U, BISECTIONS = 0.2, 1.0, 4


def need(prep: Prepared, target: Target, utilization: float) -> list[int]:
    """Replicas of `target` each 15 s step needs (over the window and the tail)."""
    timeline: Timeline = prep.timelines[target.pool]
    speed = prep.capacity.get(target.name, 1.0)
    per_bucket = []
    for i, n in enumerate(timeline.requests):
        if prep.jobs:
            busy = timeline.work_s[i]
        else:
            busy = target.service_s(timeline.input_tokens[i], timeline.output_tokens[i]) / speed
        share = busy / target.pool_size / timeline.bucket_s
        per_bucket.append(math.ceil(share / utilization - 1e-9) if n > 0 else 0)
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

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        return self.plans[target.name][0] if self.plans[target.name] else 0

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        for t in world.targets:
            plan = self.plans[t.name]
            k = min(len(plan) - 1, int(world.elapsed_s // STEP_S))
            set_replicas(world.cluster, t, plan[k], workload(state, t.name).desired_replicas)


def plans(prep: Prepared, utilization: float) -> dict[str, list[int]]:
    out = {}
    for t in prep.targets:
        load_steps = math.ceil(t.load_s * LOAD_MARGIN / STEP_S)
        out[t.name] = schedule(need(prep, t, utilization), load_steps)
    return out


@dataclass(frozen=True, slots=True)
class Bound:
    outcome: Outcome
    utilization: float
    certified: bool
    """Its replay reached the target attainment."""


def bound(prep: Prepared, target: float, progress: Callable[[str], None] | None = None) -> Bound:
    """The cheapest certified schedule found by bisection on the planned utilization."""

    def run(u: float) -> Outcome:
        if progress is not None:
            progress(f"bound: u={u:.3g}")
        p = plans(prep, u)
        controller = Scheduled(p)
        entry = Entry(
            "bound", f"utilization={u:.3g}", lambda sim, d: controller, controller.initial
        )
        return replay(prep, entry)

    best = run(HIGH_U)
    if best.figures.slo_attainment >= target:
        return Bound(best, HIGH_U, True)
    low = run(LOW_U)
    if low.figures.slo_attainment < target:
        return Bound(low, LOW_U, False)
    lo, hi = LOW_U, HIGH_U
    certified = [(LOW_U, low)]
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        o = run(mid)
        if o.figures.slo_attainment >= target:
            lo = mid
            certified.append((mid, o))
        else:
            hi = mid
    u, found = min(certified, key=lambda c: c[1].figures.gpu_hours)
    return Bound(found, u, True)
