"""One workload's signals as assess reads them: demand (queue, wait, tokens) against its SLO,
the trend of its queue over the last samples, and how long it has been calm.

What assess remembers of a workload between ticks (`WorkloadMemory`: since when it is calm, the
recent queue samples) goes in and comes out here. A fleet tick reads 200 workloads, so the
signals are built from values already of their types, without validating them again.
"""

from __future__ import annotations

from datetime import datetime

from agent.signals.memory import MEMORY_SAMPLES, WorkloadMemory
from agent.signals.model import WorkloadSignals
from agent.signals.settings import AssessSettings
from agent.signals.slo import slo_view
from policies.activity import QUEUELESS_KINDS
from tools.model import Metric, Workload


def signals_of(
    workload: Workload,
    now: datetime,
    mem: WorkloadMemory | None,
    settings: AssessSettings,
    idle_for_s: float | None,
) -> tuple[WorkloadSignals, WorkloadMemory]:
    depth = _value(workload.queue_depth, now, settings)
    wait = _value(workload.queue_wait_s, now, settings)
    served = _value(workload.tokens_per_s, now, settings)
    mem = mem or _NO_MEMORY
    slo = settings.slo_wait_s.get(workload.pool, settings.default_slo_wait_s)
    if depth is None:
        # No queue reading. A render or batch workload has no request queue: its demand is its
        # cards' activity, read through the pool's idleness. Anything else is held as it is.
        queueless = workload.kind in QUEUELESS_KINDS and workload.queue_depth.status == "missing"
        signal = _signals(
            workload, slo, idle_for_s=idle_for_s if queueless else None, stale=not queueless
        )
        return signal, mem
    per_replica = depth / max(workload.ready_replicas, 1)
    calm = (wait or 0.0) < settings.calm_ratio * slo and per_replica < (
        settings.calm_depth_per_replica
    )
    calm_since = (mem.calm_since or now) if calm else None
    samples = (*mem.samples, (now.timestamp(), depth))[-MEMORY_SAMPLES:]
    signal = _signals(
        workload,
        slo,
        queue_depth=depth,
        queue_wait_s=wait,
        tokens_per_s=served,
        demand_trend=trend_per_min(samples),
        idle_for_s=idle_for_s,
        calm_for_s=None if calm_since is None else (now - calm_since).total_seconds(),
    )
    view, slo_memory = slo_view(workload, now, mem.slo, settings)
    if view is not None:
        signal = signal.model_copy(update={"slo": view})
    memory = WorkloadMemory.model_construct(calm_since=calm_since, samples=samples, slo=slo_memory)
    return signal, memory


_NO_MEMORY = WorkloadMemory()


def _signals(
    workload: Workload,
    slo: float,
    *,
    queue_depth: float | None = None,
    queue_wait_s: float | None = None,
    tokens_per_s: float | None = None,
    demand_trend: float | None = None,
    idle_for_s: float | None = None,
    calm_for_s: float | None = None,
    stale: bool = False,
) -> WorkloadSignals:
    # Every value is of its declared type here (the workload's fields are validated, the
    # readings are floats): built without validating 200 of them again every tick.
    return WorkloadSignals.model_construct(
        workload=workload.name,
        pool=workload.pool,
        kind=workload.kind,
        desired_replicas=workload.desired_replicas,
        ready_replicas=workload.ready_replicas,
        queue_depth=queue_depth,
        queue_wait_s=queue_wait_s,
        tokens_per_s=tokens_per_s,
        slo_wait_s=slo,
        demand_trend=demand_trend,
        idle_for_s=idle_for_s,
        calm_for_s=calm_for_s,
        stale=stale,
        slo=None,
    )


def _value(metric: Metric, now: datetime, settings: AssessSettings) -> float | None:
    aged = metric.aged(now, settings.metric_max_age_s)
    return aged.value if aged.usable else None


def trend_per_min(samples: tuple[tuple[float, float], ...]) -> float | None:
    """Least-squares slope of queue depth over time, per minute (None with fewer than 3)."""
    if len(samples) < 3:
        return None
    t0 = samples[0][0]
    xs = [(t - t0) / 60.0 for t, _ in samples]
    ys = [d for _, d in samples]
    mean_x = sum(xs) / len(xs)
    mean_y = sum(ys) / len(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var
