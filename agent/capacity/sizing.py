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
- kv: the KV-cache tokens the work in flight holds (Little's law again) within the caches.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from agent.capacity.forecast import Forecast
from agent.capacity.replica import KV_HEADROOM, Capacity
from agent.capacity.staffing import servers_for

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


class Sizing(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    need: int
    terms: dict[str, int]
    """Replicas each term asks for: forecast, burst, backlog, kv."""
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
) -> Sizing:
    """The replicas `demand` needs of replicas of `capacity` to meet the TTFT target."""
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
        "kv": _kv(demand, kv_tokens),
    }
    deciding = max(terms, key=lambda k: (terms[k], k == "forecast"))
    need = terms[deciding]
    words = (
        f"forecast {demand.forecast.mean:.1f} +- {demand.forecast.sd:.1f} slots in flight "
        f"{demand.forecast.horizon_s:.0f} s ahead (now {demand.now:.1f}, short-window high "
        f"{demand.short_high:.1f}, {demand.queued:g} queued); one replica serves "
        f"{capacity.slots} at ITL {capacity.itl_s * 1000:.0f} ms (limited by "
        f"{capacity.limited_by}, speed x{capacity.correction:.2f}); replicas by term: "
        + ", ".join(f"{k} {v}" for k, v in terms.items())
        + f" -> {need} ({deciding})"
    )
    return Sizing(need=need, terms=terms, deciding=deciding, words=words)


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


def _kv(demand: Demand, kv_tokens: int | None) -> int:
    if not kv_tokens or demand.kv_tokens_held is None or demand.kv_tokens_held <= 0:
        return 0
    return math.ceil(demand.kv_tokens_held / (kv_tokens * KV_HEADROOM))
