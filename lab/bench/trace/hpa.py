"""HPA-style: the Kubernetes Horizontal Pod Autoscaler's algorithm over GPU utilization.

Per workload, every `sync` (15 s, kube-controller-manager's --horizontal-pod-autoscaler-sync-
period): desired = ceil(current x metric / target), unchanged while the ratio is within the
tolerance (0.1); scale-down takes the highest recommendation of the last 300 s (the default
scaleDown stabilization window); scale-up is limited to max(+4 pods, +100 %) per 15 s (the default
scaleUp policies, selectPolicy Max). The metric is the mean GPU utilization of the workload's
cards (DCGM_FI_DEV_GPU_UTIL through a metrics adapter: what a GPU HPA reads), the target (the knob)
a utilization. An HPA never goes below one replica (scale to zero needs the alpha HPAScaleToZero).
`HpaCore` is the algorithm alone: KEDA drives one too.

Units: the metric is read in percent (0..100, DCGM's unit); the knob is a fraction (0..1), so the
ratio divides by `100 x target`. (Dividing percent by a fraction sent the HPA to its maximum
whatever the knob: tests/bench/test_knobs.py keeps that from coming back.)
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from lab.bench.trace.base import (
    Baseline,
    Target,
    World,
    gpu_utilization_pct,
    set_replicas,
    workload,
)

SYNC_S = 15.0
TOLERANCE = 0.1
DOWN_STABILIZATION_S = 300.0
UP_PODS, UP_PERCENT = 4, 100


@dataclass(slots=True)
class HpaCore:
    """One HPA's recommendation, stabilization and rate limits."""

    min_replicas: int
    max_replicas: int
    history: deque[tuple[float, int]] = field(default_factory=deque)

    def desired(self, t: float, current: int, ratio: float | None) -> int:
        """The replica count for `ratio` = metric / target, at `current` replicas."""
        if ratio is None or current == 0:
            return current
        raw = current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(current * ratio - 1e-9)
        raw = max(self.min_replicas, min(self.max_replicas, raw))
        if not self.history:
            # The replay starts on a cluster already running at `current`: an HPA that has been
            # watching it recommended that count, so its stabilization holds from the start.
            self.history.append((t, current))
        self.history.append((t, raw))
        while self.history and self.history[0][0] < t - DOWN_STABILIZATION_S:
            self.history.popleft()
        wanted = raw
        if raw < current:  # the safest (highest) recommendation of the window
            wanted = min(current, max(n for _, n in self.history))
        limit = max(current + UP_PODS, current * (100 + UP_PERCENT) // 100)
        return max(self.min_replicas, min(wanted, limit, self.max_replicas))


class Hpa(Baseline):
    """The HPA on GPU utilization; `target_utilization` (a fraction, 0..1) is the knob."""

    name = "hpa"
    interval_s = SYNC_S
    knob = "target_utilization"

    def __init__(self, target_utilization: float = 0.8) -> None:
        self.target = target_utilization
        self.cores: dict[str, HpaCore] = {}

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        for t in world.targets:
            core = self.cores.setdefault(t.name, HpaCore(max(1, t.min_replicas), t.max_replicas))
            w = workload(state, t.name)
            util_pct = gpu_utilization_pct(state, w)
            ratio = None if util_pct is None else util_pct / (100.0 * self.target)
            current = w.desired_replicas
            want = core.desired(world.elapsed_s, current, ratio)
            if current == 0:
                want = core.min_replicas
            self._apply(world, t, want, current)

    @staticmethod
    def _apply(world: World, target: Target, want: int, current: int) -> None:
        set_replicas(world.cluster, target, want, current)
