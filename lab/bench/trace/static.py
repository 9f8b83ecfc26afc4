"""The static baseline: a fixed replica count, provisioned from the start and never changed.

Its knob is the share of a replica planned at the load's peak: on the training split, the count
is the peak of the need (the replica-seconds of service each 10 s bucket's arrivals take, at the
profiled speeds, per second, divided by that share); the count chosen there is what the test
split runs (`counts`), so static reads nothing of the load it is scored on.
"""

from __future__ import annotations

from lab.bench.trace.base import Baseline, Target, World, ceil_div, set_replicas, workload
from lab.bench.trace.load import Timeline


def needed(timeline: Timeline, target: Target, utilization: float, jobs: bool) -> list[int]:
    """Replicas each bucket needs, over all the pool's workloads, at the profiled speeds."""
    out: list[int] = []
    for i, n in enumerate(timeline.requests):
        if jobs:
            busy = timeline.work_s[i]
        else:
            busy = target.service_s(timeline.input_tokens[i], timeline.output_tokens[i])
        out.append(ceil_div(busy / timeline.bucket_s, utilization) if n > 0 else 0)
    return out


class Static(Baseline):
    name = "static"
    interval_s = 3600.0
    knob = "peak_utilization"

    def __init__(
        self,
        replicas: int | None = None,
        utilization: float = 0.8,
        counts: dict[str, int] | None = None,
    ) -> None:
        self.replicas = replicas
        """Per workload; None: `counts`, else the load's peak at `utilization`."""
        self.utilization = utilization
        self.counts = counts

    def count(self, timeline: Timeline, target: Target, jobs: bool) -> int:
        if self.replicas is not None:
            return max(1, min(self.replicas, target.max_replicas))
        if self.counts is not None and target.name in self.counts:
            return max(1, min(self.counts[target.name], target.max_replicas))
        need = needed(timeline, target, self.utilization, jobs)
        peak = ceil_div(max(need, default=0), target.pool_size)
        return max(1, min(peak, target.max_replicas))

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        return self.count(timeline, target, jobs)

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        for t in world.targets:
            want = self.count(world.timelines[t.pool], t, world.jobs)
            set_replicas(world.cluster, t, want, workload(state, t.name).desired_replicas)
