"""Dynamo-planner-style: replicas = ceil(predicted demand / engine capacity), every interval.

Every `adjustment_interval` (180 s) the planner reads the frontend's counters for the last
interval (requests, mean input and output lengths), predicts the next interval's request rate
(the constant predictor: the next interval looks like the last) and asks for
ceil(rate / capacity) engines, where one engine's capacity comes from pre-deployment profiling
(its prefill and decode throughput at these lengths) times the share of it the operator plans to
use (the knob). It sees no queue: the failure mode of Dynamo #10528 under bursts. At least one
engine. A pool with several workloads splits the engines among them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from evals.bench.trace.base import Baseline, World, ceil_div, set_replicas, workload
from evals.bench.trace.record import Arrivals

ADJUSTMENT_INTERVAL_S = 180.0


@dataclass(slots=True)
class _Seen:
    at_s: float
    counts: Arrivals


class Dynamo(Baseline):
    name = "dynamo"
    interval_s = ADJUSTMENT_INTERVAL_S
    knob = "capacity_share"

    def __init__(self, capacity_share: float = 0.8) -> None:
        self.share = capacity_share
        self.seen: dict[str, _Seen] = {}

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        now = world.elapsed_s
        for pool in sorted({t.pool for t in world.targets}):
            counts = world.arrivals.get(pool, Arrivals())
            last = self.seen.get(pool, _Seen(0.0, Arrivals()))
            self.seen[pool] = _Seen(now, replace(counts))
            span = now - last.at_s
            n = counts.requests - last.counts.requests
            if span <= 0:
                continue
            members = [t for t in world.targets if t.pool == pool]
            if n <= 0:
                engines = 1
            else:
                before = last.counts
                if world.jobs:  # a render job's GPU seconds are its service time
                    service_s = (counts.work_s - before.work_s) / n
                else:
                    service_s = members[0].service_s(
                        (counts.input_tokens - before.input_tokens) / n,
                        (counts.output_tokens - before.output_tokens) / n,
                    )
                engines = max(1, ceil_div(n / span * service_s, self.share))
            each = ceil_div(engines, len(members))
            for t in members:
                w = workload(state, t.name)
                set_replicas(world.cluster, t, max(1, each), w.desired_replicas)
