"""AIBrix-KPA-style: Knative's pod autoscaler with AIBrix's windows (stable 180 s, panic 60 s).

Per workload, every tick: the concurrency (running plus waiting requests) averaged over the stable
window gives desired = ceil(mean / target); over the panic window, a desired at or above twice the
ready replicas (panic threshold 200 %) enters panic mode, in which the count follows the panic
window's desired and never goes down, until a stable window has passed without panic. Scale-down
is limited to halving per tick (max-scale-down-rate 2). The target concurrency per pod is the
knob. Minimum one replica: without an activator nothing wakes a workload at zero (AIBrix #476).
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

STABLE_S = 180.0
PANIC_S = 60.0
PANIC_THRESHOLD = 2.0
MAX_DOWN_RATE = 2.0
TICK_S = 5.0


@dataclass(slots=True)
class _Pod:
    samples: Samples = field(default_factory=lambda: Samples(STABLE_S))
    panic_since: float | None = None


class Aibrix(Baseline):
    name = "aibrix"
    interval_s = TICK_S
    knob = "target_concurrency"

    def __init__(self, target_concurrency: float = 32.0) -> None:
        self.target = target_concurrency
        self.pods: dict[str, _Pod] = {}

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        now = world.elapsed_s
        for t in world.targets:
            p = self.pods.setdefault(t.name, _Pod())
            w = workload(state, t.name)
            p.samples.add(now, ongoing(world, t, w))
            stable = ceil_div(p.samples.mean(now - STABLE_S), self.target)
            panic = ceil_div(p.samples.mean(now - PANIC_S), self.target)
            ready = max(1, w.ready_replicas)
            current = w.desired_replicas
            if panic / ready >= PANIC_THRESHOLD:
                p.panic_since = now
            if p.panic_since is not None and now - p.panic_since < STABLE_S:
                want = max(panic, current)
            else:
                p.panic_since = None
                want = max(stable, ceil_div(ready, MAX_DOWN_RATE))
            set_replicas(world.cluster, t, max(1, want), current)
