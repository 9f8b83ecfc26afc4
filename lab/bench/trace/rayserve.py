"""Ray-Serve-style: replicas = ceil(ongoing requests / target_ongoing_requests), with delays.

Ray Serve's default autoscaling policy, per deployment: the ongoing requests (running plus queued
for the deployment) averaged over `look_back_period_s` (30 s), divided by
`target_ongoing_requests` (default 2: the knob), smoothing factor 1; a decision to scale up is
applied once it has held for `upscale_delay_s` (30 s), one to scale down after
`downscale_delay_s` (600 s). `min_replicas` 1 (the default). The ongoing count comes from Serve's
own router: here the gateway's `in_flight` plus the queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.bench.trace.base import (
    Baseline,
    Samples,
    World,
    ceil_div,
    ongoing,
    set_replicas,
    workload,
)

LOOK_BACK_S = 30.0
UPSCALE_DELAY_S = 30.0
DOWNSCALE_DELAY_S = 600.0
CONTROL_S = 5.0


@dataclass(slots=True)
class _Deployment:
    samples: Samples = field(default_factory=lambda: Samples(LOOK_BACK_S))
    up_since: float | None = None
    down_since: float | None = None


class RayServe(Baseline):
    name = "rayserve"
    interval_s = CONTROL_S
    knob = "target_ongoing_requests"

    def __init__(self, target_ongoing_requests: float = 2.0) -> None:
        self.target = target_ongoing_requests
        self.deployments: dict[str, _Deployment] = {}

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        now = world.elapsed_s
        for t in world.targets:
            d = self.deployments.setdefault(t.name, _Deployment())
            w = workload(state, t.name)
            d.samples.add(now, ongoing(world, t, w))
            mean = d.samples.mean(now - LOOK_BACK_S)
            current = w.desired_replicas
            want = max(1, t.min_replicas, min(t.max_replicas, ceil_div(mean, self.target)))
            if want > current:
                d.down_since = None
                d.up_since = now if d.up_since is None else d.up_since
                if now - d.up_since >= UPSCALE_DELAY_S:
                    set_replicas(world.cluster, t, want, current)
                    d.up_since = None
            elif want < current:
                d.up_since = None
                d.down_since = now if d.down_since is None else d.down_since
                if now - d.down_since >= DOWNSCALE_DELAY_S:
                    set_replicas(world.cluster, t, want, current)
                    d.down_since = None
            else:
                d.up_since = d.down_since = None
