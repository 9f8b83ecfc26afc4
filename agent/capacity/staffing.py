"""Erlang-C staffing of request slots: how many servers keep the chance of waiting small.

A replica serving within its ITL target is `slots` servers (agent.capacity.replica); requests
hold a slot for their whole life (prefill and decode), so the slots are an M/G/c system whose
offered load is the work in flight (Little's law: arrival rate x time in service). A request
waits only when every slot is taken; Erlang C gives that chance, and the chance of waiting
longer than `t` is C x exp(-(c - a) t / S) (M/M/c). The smallest c that keeps it within `eps`
is found by Erlang B's recursion; above `EXACT_UP_TO` offered slots the Halfin-Whitt
square-root rule c = a + beta sqrt(a) stands in (its beta solves the same chance, the wait
budget ignored, which errs on the safe side).
"""

from __future__ import annotations

import math

EXACT_UP_TO = 2000.0
"""Offered load (in slots) up to which the recursion is run exactly."""


def erlang_c(servers: int, offered: float) -> float:
    """The chance that an arrival waits, with `servers` servers and `offered` erlangs."""
    if offered <= 0:
        return 0.0
    if servers <= offered:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1.0 - rho * (1.0 - b))


def servers_for(offered: float, eps: float, wait_over_service: float = 0.0) -> int:
    """The fewest servers for which P(wait > t) <= eps, with `wait_over_service` = t / S."""
    if offered <= 0:
        return 0
    if offered > EXACT_UP_TO:
        return math.ceil(offered + halfin_whitt_beta(eps) * math.sqrt(offered))
    b = 1.0
    k = 0
    while True:
        k += 1
        b = offered * b / (k + offered * b)
        if k <= offered:
            continue
        c = b / (1.0 - offered / k * (1.0 - b))
        if c * math.exp(-(k - offered) * wait_over_service) <= eps:
            return k


def halfin_whitt_beta(eps: float) -> float:
    """The beta with [1 + beta Phi(beta) / phi(beta)]^-1 = eps (the chance of waiting in the
    Halfin-Whitt regime), by bisection."""
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1), got {eps}")
    lo, hi = 0.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if _hw_wait(mid) > eps:
            lo = mid
        else:
            hi = mid
    return hi


def _hw_wait(beta: float) -> float:
    phi = math.exp(-beta * beta / 2) / math.sqrt(2 * math.pi)
    big_phi = 0.5 * (1 + math.erf(beta / math.sqrt(2)))
    return 1.0 / (1.0 + beta * big_phi / phi)
