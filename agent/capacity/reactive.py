"""The reactive layer: what adds replicas at once, whatever the forecast said.

A forecast sees what came before; a flash crowd, a burst of long prompts or a profile that
flatters the replicas shows first in what the engines read now. Each reading below, past its
threshold (the policy's `reactive` keys), asks for the replicas that bring it back:
- KV-cache usage at or above `kv_usage`: the caches hold the same tokens at 7/8 of it;
- more requests running per ready replica than the largest batch that meets the ITL target
  (ITL(b) = a + b x batch, agent.capacity.replica): every stream of an over-full batch decodes
  slower than promised, so the running requests are spread at that batch at most; an ITL reading
  above `itl_share` of the target asks for that too, and one replica more at least;
- a TTFT reading above `ttft_share` of the target: one replica more;
- requests waiting on `waiting_readings` readings in a row: what is in flight and waiting, at
  the ITL-bounded batch, and one replica more at least.

Counted from the ready replicas: the planner grows by what this asks beyond the replicas it has
asked for already (loading ones included), so nothing is asked twice. Pure: numbers in, the
reasons and the replicas out.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

MOST_REPLICAS = 4096
"""The search for the replicas an ITL-bounded batch needs stops here."""
KV_RELIEF = 0.875
"""The share of the KV threshold the caches are brought back to (0.7 at 0.8)."""


class Thresholds(BaseModel):
    """The policy's `reactive` keys and the pool's targets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ttft_s: float = Field(gt=0)
    itl_s: float = Field(gt=0)
    kv_usage: float = Field(default=0.8, gt=0, le=1)
    ttft_share: float = Field(default=0.5, gt=0)
    itl_share: float = Field(default=1.0, gt=0)
    waiting_readings: int = Field(default=2, ge=1)


class Readings(BaseModel):
    """What the engines of one workload read now (None: not exported or stale)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ready: int = Field(ge=0)
    running: float = Field(default=0.0, ge=0)
    """Requests running over the ready replicas."""
    waiting: float = Field(default=0.0, ge=0)
    in_flight: float = Field(default=0.0, ge=0)
    """Request slots in flight (Little's law), at least the requests running."""
    kv_usage: float | None = None
    ttft_s: float | None = None
    itl_s: float | None = None
    waited_readings: int = Field(default=0, ge=0)
    """Readings in a row that found requests waiting."""


def itl_bounded(running: float, batch_at: Callable[[int], int]) -> int:
    """The fewest replicas that hold `running` requests at no more than `batch_at(n)` each,
    `batch_at(n)` being the largest batch one replica serves within the ITL target when n
    replicas share the work (it must not shrink as n grows: less prefill each); 0 when none run.
    """
    if running <= 0:
        return 0

    def holds(n: int) -> bool:
        return running <= n * max(batch_at(n), 1) + 1e-9

    # holds(n) stays true as n grows (more replicas, no smaller batch each): double, then bisect.
    lo, hi = 0, 1
    while not holds(hi) and hi < MOST_REPLICAS:
        lo, hi = hi, min(2 * hi, MOST_REPLICAS)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


def react(now: Readings, limits: Thresholds, batch_at: Callable[[int], int]) -> tuple[str, int]:
    """What the reactive layer saw ("" when nothing) and the replicas it asks for in all (0:
    nothing); `batch_at(n)`: the largest batch one replica serves within the ITL target when n
    replicas share the work (see `itl_bounded`)."""
    ready = now.ready
    if ready == 0:
        return "", 0
    reasons: list[str] = []
    need = 0
    kv = now.kv_usage
    if kv is not None and kv >= limits.kv_usage:
        reasons.append(f"KV cache {kv:.0%} used (reacts at {limits.kv_usage:.0%})")
        need = max(need, math.ceil(ready * kv / (limits.kv_usage * KV_RELIEF)))
    batch = batch_at(ready)
    spread = itl_bounded(now.running, batch_at)
    if now.running > ready * batch:
        reasons.append(
            f"{now.running:.0f} request(s) running on {ready} replica(s), more than the "
            f"{batch} per replica that meet the ITL target"
        )
        need = max(need, spread)
    itl = now.itl_s
    if itl is not None and itl > limits.itl_share * limits.itl_s:
        reasons.append(f"ITL {itl * 1000:.0f} ms over the {limits.itl_s * 1000:g} ms target")
        need = max(need, ready + 1, spread)
    ttft = now.ttft_s
    if ttft is not None and ttft > limits.ttft_share * limits.ttft_s:
        reasons.append(
            f"TTFT {ttft:.2f} s over {limits.ttft_share:.0%} of the {limits.ttft_s:g} s target"
        )
        need = max(need, ready + 1)
    if now.waited_readings >= limits.waiting_readings and now.waiting > 0:
        reasons.append(
            f"{now.waiting:g} request(s) waiting on {now.waited_readings} readings in a row"
        )
        need = max(need, ready + 1, itl_bounded(now.in_flight + now.waiting, batch_at))
    return "; ".join(reasons), need
