"""The hindsight oracle and the static baseline: capacity planned from the trace itself.

Both read `World.timelines`, the expected demand per 10 s bucket, known in advance — what no real
controller has. Per bucket, the replicas needed are the replica-seconds of service the bucket's
arrivals take (their profiled prefill and decode time, or a job's GPU seconds) per second, divided
by the share of a replica one plans to use (`utilization`, the knob).

- `oracle`: at every moment, the most any bucket from now to one model load (plus a minute)
  ahead needs: replicas are ready when the demand arrives and released as soon as none is coming.
  The least capacity meeting the target with the trace known: the physical bound.
- `static`: the peak of that need, provisioned from the start and never changed.
"""

from __future__ import annotations

from evals.bench.trace.base import (
    Baseline,
    Target,
    World,
    ceil_div,
    queue_depth,
    set_replicas,
    workload,
)
from evals.bench.trace.load import Timeline

LOOKAHEAD_EXTRA_S = 60.0
STEP_S = 5.0


def needed(timeline: Timeline, target: Target, utilization: float, jobs: bool) -> list[int]:
    """Replicas each bucket needs, over all the pool's workloads."""
    out: list[int] = []
    for i, n in enumerate(timeline.requests):
        if jobs:
            busy = timeline.work_s[i]
        else:
            busy = target.service_s(timeline.input_tokens[i], timeline.output_tokens[i])
        out.append(ceil_div(busy / timeline.bucket_s, utilization) if n > 0 else 0)
    return out


def _per_workload(total: int, members: int) -> int:
    return ceil_div(total, members)


class Oracle(Baseline):
    name = "oracle"
    interval_s = STEP_S
    knob = "utilization"

    def __init__(self, utilization: float = 0.8) -> None:
        self.utilization = utilization
        self.plans: dict[str, list[int]] = {}

    def _plan(self, timeline: Timeline, target: Target, jobs: bool) -> list[int]:
        if target.pool not in self.plans:
            self.plans[target.pool] = needed(timeline, target, self.utilization, jobs)
        return self.plans[target.pool]

    def _ahead(self, timeline: Timeline, target: Target, jobs: bool, now: float) -> int:
        need = self._plan(timeline, target, jobs)
        first = int(now // timeline.bucket_s)
        last = int((now + target.load_s + LOOKAHEAD_EXTRA_S) // timeline.bucket_s)
        return _per_workload(max(need[first : last + 1], default=0), target.pool_size)

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        return self._ahead(timeline, target, jobs, 0.0)  # ready for the first minutes

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        for t in world.targets:
            want = self._ahead(world.timelines[t.pool], t, world.jobs, world.elapsed_s)
            if world.cluster.in_flight(t.name) or (queue_depth(workload(state, t.name)) or 0):
                want = max(want, 1)  # what arrived is served before the last replica goes
            set_replicas(world.cluster, t, want, workload(state, t.name).desired_replicas)


class Static(Baseline):
    name = "static"
    interval_s = 3600.0
    knob = "replicas"

    def __init__(self, replicas: int | None = None, utilization: float = 0.8) -> None:
        self.replicas = replicas
        """Per workload; None: the trace's peak at `utilization`."""
        self.utilization = utilization

    def count(self, timeline: Timeline, target: Target, jobs: bool) -> int:
        if self.replicas is not None:
            return max(1, min(self.replicas, target.max_replicas))
        need = needed(timeline, target, self.utilization, jobs)
        peak = _per_workload(max(need, default=0), target.pool_size)
        return max(1, min(peak, target.max_replicas))

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        return self.count(timeline, target, jobs)

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        for t in world.targets:
            want = self.count(world.timelines[t.pool], t, world.jobs)
            set_replicas(world.cluster, t, want, workload(state, t.name).desired_replicas)
