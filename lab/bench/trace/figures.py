"""The figures of one replay (the JSON of `steward bench trace`) and how they are computed.

Definitions (docs/benchmarks.md says the same):
- `slo_attainment`: requests that completed with their time to first token within the TTFT target
  *and* their mean inter-token latency within the ITL target, over the requests that arrived in
  the scored window and were not rejected (a request no model can hold is rejected by the model
  server, under every controller alike); a request aborted or unfinished when the run ends fails;
  a render job meets it when its wait to start is within the TTFT target;
- `ttft_attainment`, `itl_attainment`: each target alone, over the same requests;
- `ttft_p50_s`, `ttft_p99_s`, `itl_p99_s`, `queue_wait_p99_s`: over the scored requests that got a
  first token / finished / left the queue by the end of the run (arrivals go on 5 minutes after
  the scored window, and the run with them);
- `gpu_hours`: cards held by the driven workloads (loading, serving or draining) over the scored
  window;
  `idle_gpu_hours` the part of it they were not busy; `energy_kwh` what those cards drew
  (idle ~11 % of the limit plus the busy share of the rest); cards nobody holds count nothing;
- `scaling_actions`: changes of a driven workload's wanted replicas; `reversals`: changes undoing
  the previous one (other direction) within 10 minutes;
- `dropped`: requests still waiting, never admitted, when the run ends; `aborted`: requests
  killed mid-flight (a scale-down's grace period ran out); `rejected`: see above;
- `from_zero_wait_p99_s`: p99 queue wait of the requests that arrived while their pool had no
  ready replica (null when none did);
- `median_ms`, `p99_ms`: the controller's own decision time, wall clock, per call.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

REVERSAL_S = 600.0


class Figures(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    slo_attainment: float
    ttft_attainment: float
    itl_attainment: float
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    itl_p99_s: float | None
    queue_wait_p99_s: float | None
    gpu_hours: float
    idle_gpu_hours: float
    energy_kwh: float
    scaling_actions: int
    reversals: int
    dropped: int
    aborted: int
    rejected: int
    from_zero_wait_p99_s: float | None
    median_ms: float
    p99_ms: float


def weighted_quantile(samples: Sequence[tuple[float, float]], q: float) -> float | None:
    """The `q` quantile of (value, count) samples; None when there are none."""
    return weighted_quantiles(samples, (q,))[0]


def weighted_quantiles(
    samples: Sequence[tuple[float, float]], qs: Sequence[float]
) -> list[float | None]:
    """Each `q` quantile of (value, count) samples (one sort for all); None when there are none."""
    total = sum(n for _, n in samples)
    if total <= 0:
        return [None] * len(qs)
    ordered = sorted(samples)
    out: list[float | None] = []
    for q in qs:
        rank = q * total
        seen = 0.0
        found = ordered[-1][0]
        for value, n in ordered:
            seen += n
            if seen >= rank:
                found = value
                break
        out.append(found)
    return out


def reversals(changes: Sequence[tuple[float, int]]) -> int:
    """Changes (time, direction +1/-1) that undo the previous one within REVERSAL_S."""
    count = 0
    for (t0, d0), (t1, d1) in itertools.pairwise(changes):
        if d1 == -d0 and t1 - t0 <= REVERSAL_S:
            count += 1
    return count


def decision_ms(samples: Sequence[float]) -> tuple[float, float]:
    """(median, p99) in ms, the way evals' `measure` ranks them."""
    if not samples:
        return 0.0, 0.0
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return round(statistics.median(ordered), 3), round(p99, 3)


def rounded(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)
