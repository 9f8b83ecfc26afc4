"""KEDA-style: a ScaledObject with a queue-length trigger (vLLM's num_requests_waiting).

KEDA itself handles 0 <-> 1: every `pollingInterval` (30 s) it asks the trigger whether the
workload is active (queue length > activationThreshold, 0); a workload active at zero goes to one
replica, one inactive for `cooldownPeriod` (300 s) since it was last active goes back to zero
(minReplicaCount 0, the default). Between 1 and N the HPA KEDA creates scales on the same metric as
an AverageValue external metric: desired = ceil(queue / threshold), with the HPA's defaults
(hpa.HpaCore: 15 s sync, tolerance, 300 s scale-down stabilization, up-rate limits). The
threshold (the trigger's `threshold`, waiting requests per replica) is the knob.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.bench.trace.base import Baseline, World, queue_depth, set_replicas, workload
from lab.bench.trace.hpa import SYNC_S, HpaCore

POLLING_S = 30.0
COOLDOWN_S = 300.0
ACTIVATION = 0.0


@dataclass(slots=True)
class _Scaled:
    hpa: HpaCore
    last_active_s: float = 0.0
    next_poll_s: float = 0.0


class Keda(Baseline):
    name = "keda"
    interval_s = SYNC_S
    knob = "threshold"

    def __init__(self, threshold: float = 5.0) -> None:
        self.threshold = threshold
        self.scaled: dict[str, _Scaled] = {}

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        now = world.elapsed_s
        for t in world.targets:
            s = self.scaled.setdefault(t.name, _Scaled(HpaCore(1, t.max_replicas)))
            w = workload(state, t.name)
            queue = queue_depth(w)
            current = w.desired_replicas
            if now >= s.next_poll_s:  # the activation loop: KEDA's own, every pollingInterval
                s.next_poll_s = now + POLLING_S
                if queue is not None and queue > ACTIVATION:
                    s.last_active_s = now
                    if current == 0:
                        set_replicas(world.cluster, t, 1, current)
                        continue
                elif current > 0 and now - s.last_active_s >= COOLDOWN_S:
                    set_replicas(world.cluster, t, 0, current)
                    continue
            if current == 0:
                continue  # below one replica the HPA is off
            ratio = None if queue is None else queue / (self.threshold * current)
            set_replicas(world.cluster, t, s.hpa.desired(now, current, ratio), current)
