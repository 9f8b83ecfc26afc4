"""How many replicas the SLO needs, term by term, and each term in plain words.

Offered work is counted in request slots in flight (Little's law: arrivals x time in service at
the ITL target; agent.capacity.replica turns one replica into slots). The replicas needed are
the largest of:
- forecast: Erlang-C staffing of the forecast's high end (mean + z sd) one model load plus one
  tick ahead, so the TTFT target holds with probability 1 - eps;
- burst: the same staffing of the short window's high percentile (what the last minutes
  actually asked, whatever the forecast says);
- backlog: the queued requests admitted at once, and their prompts prefilled within the TTFT
  target once the replicas asked for are ready;
- prefill: each replica's prompts wait for its prefill (one prompt at a time, in chunks), a queue
  whose wait grows as rho / (1 - rho) x a prompt's prefill with the prefill utilization rho
  (M/M/1; Kingman's G/G/1 approximation with Poisson arrivals): the replicas that keep that wait
  within `ttft_share` of what the TTFT target leaves after the prompt's own prefill, at the short
  window's high prompt rate;
- kv: the KV-cache tokens the work in flight holds (Little's law again) within the caches.

A replica's slots depend on how many replicas share the prompts' prefill (agent.capacity.replica:
the more of its time a replica prefills, the fewer streams meet the ITL target), so the replicas
needed are a fixed point: the fewest N whose own share of the prefill leaves each the slots that
N replicas' worth of sizing asks for (`size_shared`). It does not depend on how many replicas
run now, so a scale-down the sizing allowed is not undone by the sizing at one replica fewer —
the N/(N-1) check holds by construction (agent.capacity.release).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from agent.capacity.forecast import Forecast
from agent.capacity.replica import KV_HEADROOM, Capacity
from agent.capacity.staffing import servers_for

PREFILL_WAIT_SHARE = 0.5
"""The share of the TTFT target a prompt may wait for its replica's prefill (the reactive
layer's TTFT threshold by default)."""
WAIT_CHANCE = 0.05
"""The chance a request may wait for a slot (Erlang C): the SLO holds with 95 %."""
FORECAST_Z = 1.64
"""The forecast's high end: its 95th percentile."""


class Demand(BaseModel):
    """What the workload is offered, in request slots in flight, and what waits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    now: float
    forecast: Forecast
    short_high: float
    """The short window's high percentile."""
    queued: float = 0.0
    prompt_tokens: float | None = None
    """Mean prompt of recent requests (None: not known)."""
    output_tokens: float | None = None
    kv_tokens_held: float | None = None
    """KV-cache tokens held by the requests in flight now (None: not known)."""
    prompt_rate: float = 0.0
    """Prompt tokens/s to prefill (the short window's high; 0: not known)."""


class Sizing(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    need: int
    terms: dict[str, int]
    """Replicas each term asks for: forecast, burst, backlog, prefill, kv."""
    deciding: str
    """The term that asks for the most."""
    words: str


def size(
    demand: Demand,
    capacity: Capacity,
    *,
    ttft_s: float,
    kv_tokens: int | None = None,
    eps: float = WAIT_CHANCE,
    z: float = FORECAST_Z,
    ttft_share: float = PREFILL_WAIT_SHARE,
) -> Sizing:
    """The replicas `demand` needs of replicas of `capacity` to meet the TTFT target (the
    prefill queue's wait kept within `ttft_share` of it)."""
    slots = max(1, capacity.slots)
    service_s = _service_s(demand, capacity)
    prefill_s = (demand.prompt_tokens or 0.0) / capacity.prefill_tok_s
    budget = max(0.0, ttft_s - prefill_s)
    ratio = budget / service_s if service_s else 0.0
    high = demand.forecast.upper(z)
    terms = {
        "forecast": _replicas(servers_for(high, eps, ratio), slots),
        "burst": _replicas(servers_for(demand.short_high, eps, ratio), slots),
        "backlog": _backlog(demand, capacity, slots, ttft_s),
        "prefill": _prefill(demand, capacity, ttft_s, ttft_share),
        "kv": _kv(demand, kv_tokens),
    }
    deciding = max(terms, key=lambda k: (terms[k], k == "forecast"))
    need = terms[deciding]
    words = (
        f"forecast {demand.forecast.mean:.1f} +- {demand.forecast.sd:.1f} slots in flight "
        f"{demand.forecast.horizon_s:.0f} s ahead (now {demand.now:.1f}, short-window high "
        f"{demand.short_high:.1f}, {demand.queued:g} queued); one replica serves "
        f"{capacity.slots} at ITL {capacity.itl_s * 1000:.0f} ms (limited by "
        f"{capacity.limited_by}, speed x{capacity.correction:.2f}) and prefills "
        f"{capacity.prefill_tok_s:.0f} tok/s ({demand.prompt_rate:.0f} asked); replicas by term: "
        + ", ".join(f"{k} {v}" for k, v in terms.items())
        + f" -> {need} ({deciding})"
    )
    return Sizing(need=need, terms=terms, deciding=deciding, words=words)


MOST_REPLICAS = 4096
"""The fixed point's search stops here (a sizing beyond it says the profile serves nothing)."""


def size_shared(
    demand: Demand,
    capacity_at: Callable[[int], Capacity],
    *,
    ttft_s: float,
    kv_tokens: int | None = None,
    eps: float = WAIT_CHANCE,
    z: float = FORECAST_Z,
    ttft_share: float = PREFILL_WAIT_SHARE,
) -> tuple[Sizing, Capacity]:
    """The fewest replicas N such that N replicas of `capacity_at(N)` (one replica's capacity
    when N share the work) meet the TTFT target for `demand`, the sizing at N, and that capacity.

    `capacity_at(n)` must not lose slots as n grows (more replicas, less prefill each); the
    replicas asked then fall as n grows, and the smallest n that asks for no more than n is
    found by bisection."""

    def at(n: int) -> tuple[Sizing, Capacity]:
        cap = capacity_at(n)
        sized = size(
            demand, cap, ttft_s=ttft_s, kv_tokens=kv_tokens, eps=eps, z=z, ttft_share=ttft_share
        )
        return sized, cap

    found = at(1)
    if found[0].need <= 1:
        return found
    lo, hi = 1, 2
    found = at(hi)
    while found[0].need > hi and hi < MOST_REPLICAS:
        lo, hi = hi, min(2 * hi, MOST_REPLICAS)
        found = at(hi)
    if found[0].need > hi:
        return found  # nothing fits: the sizing at the search's end says so
    while hi - lo > 1:  # need(lo) > lo and need(hi) <= hi
        mid = (lo + hi) // 2
        got = at(mid)
        if got[0].need <= mid:
            hi, found = mid, got
        else:
            lo = mid
    sizing, cap = found
    if sizing.need == hi:
        return sizing, cap
    # Fewer than `hi` would each carry more prefill, and then ask for `hi` or more.
    words = f"{sizing.words}; {hi} replicas, since {lo} would each prefill more and ask for more"
    return sizing.model_copy(update={"need": hi, "words": words}), cap


def _service_s(demand: Demand, capacity: Capacity) -> float:
    """A request's time in a slot: its prefill and its decode at the target ITL (0: unknown)."""
    if demand.prompt_tokens is None or demand.output_tokens is None:
        return 0.0
    return (
        demand.prompt_tokens / capacity.prefill_tok_s
        + max(demand.output_tokens - 1.0, 0.0) * capacity.itl_s
    )


def _replicas(servers: int, slots: int) -> int:
    return math.ceil(servers / slots) if servers > 0 else 0


def _backlog(demand: Demand, capacity: Capacity, slots: int, ttft_s: float) -> int:
    """Replicas that admit every queued request at once and prefill them within the target."""
    if demand.queued <= 0:
        return 0
    admit = math.ceil((demand.now + demand.queued) / slots)
    prompts = demand.queued * (demand.prompt_tokens or 0.0)
    prefill = math.ceil(prompts / (capacity.prefill_tok_s * ttft_s)) if prompts else 0
    return max(admit, prefill)


def _prefill(demand: Demand, capacity: Capacity, ttft_s: float, share: float) -> int:
    """Replicas whose prefill queue keeps a prompt's wait within `share` of what the TTFT target
    leaves after its own prefill S, at the demand's prompt rate: rho / (1 - rho) x S <= wait, so
    rho <= r / (1 + r) with r = wait / S. 0 when a prompt's own prefill takes the whole target:
    more replicas do not prefill one prompt faster."""
    if demand.prompt_rate <= 0 or not demand.prompt_tokens:
        return 0
    prefill_s = demand.prompt_tokens / capacity.prefill_tok_s
    wait_s = share * (ttft_s - prefill_s)
    if wait_s <= 0:
        return 0
    r = wait_s / prefill_s
    rho = r / (1.0 + r)
    return math.ceil(demand.prompt_rate / (capacity.prefill_tok_s * rho) - 1e-9)


def _kv(demand: Demand, kv_tokens: int | None) -> int:
    if not kv_tokens or demand.kv_tokens_held is None or demand.kv_tokens_held <= 0:
        return 0
    return math.ceil(demand.kv_tokens_held / (kv_tokens * KV_HEADROOM))
