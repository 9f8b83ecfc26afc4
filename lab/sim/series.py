"""The simulator's time series: what each workload's queue and service did, point by point.

One point per workload every `series_interval_s` (10 s on the homelab): queue depth and wait,
time to first token, utilization, tokens served (per second and in total), the mean decode
speed of one stream, and requests completed, rejected or aborted. Benchmarks and the
calibration tests read these instead of poking at the simulator's internals.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict


class SeriesPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    elapsed_s: float
    workload: str
    queue_depth: int
    queue_wait_s: float | None
    ttft_s: float | None
    utilization: float
    tokens_per_s: float
    tokens_total: float
    stream_tok_s: float | None
    """Mean decode speed of the requests that completed in the interval (one stream's speed)."""
    ready_replicas: int
    completed: int
    rejected: int
    aborted: int


class SimSeries(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    points: tuple[SeriesPoint, ...] = ()

    def of(self, workload: str) -> tuple[SeriesPoint, ...]:
        return tuple(p for p in self.points if p.workload == workload)

    def tokens_total(self, *workloads: str) -> float:
        """Tokens served so far by these workloads (their last points' totals)."""
        total = 0.0
        for w in workloads:
            pts = self.of(w)
            total += pts[-1].tokens_total if pts else 0.0
        return total
