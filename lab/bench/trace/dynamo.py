"""Dynamo-planner-style: replicas = ceil(predicted demand / engine capacity), every interval.

Every `adjustment_interval` (180 s) the planner reads the frontend's counters for the last
interval (requests, mean input and output lengths), predicts the next interval's request rate
(the constant predictor: the next interval looks like the last) and asks for
ceil(rate / capacity) engines, where one engine's capacity comes from pre-deployment profiling
(its prefill and decode throughput at these lengths) times the share of it the operator plans to
use (the knob). It sees no queue: the failure mode of Dynamo #10528 under bursts. At least one
engine. A pool with several workloads splits the engines among them. This is the planner's
throughput mode; `DynamoLoad` below is its load-based mode, and the benchmark reports the better of
the two on the training split (each with its own knob).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lab.bench.trace.base import (
    Baseline,
    World,
    ceil_div,
    queue_depth,
    set_replicas,
    workload,
)
from lab.bench.trace.record import Arrivals

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


LOAD_INTERVAL_S = 10.0
QUEUE_PER_ENGINE = 2.0
"""Waiting requests per engine above which the load-based mode adds engines."""
DOWN_AFTER_S = 60.0
"""How long the engines must look idle (KV under half the target, nobody waiting) to shed one."""
UP_FACTOR = 1.25


@dataclass(slots=True)
class _Calm:
    since_s: float | None = None


class DynamoLoad(Baseline):
    """The Dynamo planner's load-based mode: a short interval and the engines' own signals.

    Every 10 s, per workload: the mean KV-cache usage of its engines (vLLM's
    `kv_cache_usage_perc`, a fraction 0..1) and its waiting requests per engine
    (`num_requests_waiting`, a count). Above the KV target (the knob), or with more than two
    requests waiting per engine, it asks for max(+1, x(usage / target), x1.25) engines; once usage
    has stayed under half the target with nobody waiting for a minute, one engine fewer. A
    signal that is missing is left out (the queue alone decides). At least one engine.
    """

    name = "dynamo"
    interval_s = LOAD_INTERVAL_S
    knob = "kv_target"

    def __init__(self, kv_target: float = 0.8) -> None:
        self.kv_target = kv_target
        self.calm: dict[str, _Calm] = {}

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        now = world.elapsed_s
        for t in world.targets:
            w = workload(state, t.name)
            current = w.desired_replicas
            engines = max(1, w.ready_replicas)
            kv = w.kv_cache_usage
            usage = kv.value if kv.status == "fresh" and kv.value is not None else None
            waiting_per_engine = (queue_depth(w) or 0.0) / engines
            calm = self.calm.setdefault(t.name, _Calm())
            hot = (usage is not None and usage > self.kv_target) or (
                waiting_per_engine > QUEUE_PER_ENGINE
            )
            if hot or current == 0:
                calm.since_s = None
                grow = max(UP_FACTOR, (usage or 0.0) / self.kv_target)
                want = max(current + 1, ceil_div(current * grow, 1.0))
                set_replicas(world.cluster, t, max(1, want), current)
                continue
            quiet = waiting_per_engine == 0 and (usage is None or usage < self.kv_target / 2)
            if not quiet:
                calm.since_s = None
                continue
            if calm.since_s is None:
                calm.since_s = now
            elif now - calm.since_s >= DOWN_AFTER_S and current > 1:
                set_replicas(world.cluster, t, current - 1, current)
                calm.since_s = now
