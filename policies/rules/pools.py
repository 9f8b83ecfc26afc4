"""Pool limits, the total card budget, serving pools' ready replicas and scale-to-zero.

Judged on the state as the plan so far leaves it, and "never worse": an action may not take a
pool further past a limit than it already is (a pool above max_cards may still shrink). For a
scale the denial carries the bound it implies, so the engine can say what would have passed.

Rule ids: pool.max_cards, pool.min_cards, budget.total_cards, serving.min_ready_replicas,
pool.idle_before_zero.
"""

from __future__ import annotations

from datetime import timedelta

from policies.activity import pool_busy
from policies.durations import format_duration
from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger
from tools.actions import Action, ScaleWorkload
from tools.effects import Effect

MAX_CARDS = "pool.max_cards"
MIN_CARDS = "pool.min_cards"
TOTAL_CARDS = "budget.total_cards"
MIN_READY = "serving.min_ready_replicas"
IDLE_BEFORE_ZERO = "pool.idle_before_zero"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    """Denials for pool limits and the total budget after `effect` on `ledger`."""
    changes = effect.changes
    if not changes:
        return []
    # Each workload's fields read once: a pydantic model's attribute costs ~150 ns, and this
    # runs for nearly every action of a plan, on one or two ledgers.
    desired_now, ready_now = ledger.desired, ledger.ready
    deltas: dict[str, tuple[int, int]] = {}
    for w, desired, ready in changes:
        name, pool, unit = w.name, w.pool, w.cards_per_replica
        was = desired_now.get(name, w.desired_replicas)
        was_ready = ready_now.get(name, w.ready_replicas)
        cards, gained = deltas.get(pool, (0, 0))
        deltas[pool] = cards + (desired - was) * unit, gained + ready - was_ready
    scale = action if type(action) is ScaleWorkload else None
    if scale is None:
        unit = old = ready_w = 0
    else:  # one change: its workload's
        old, ready_w = was, was_ready
    denials: list[Denial] = []
    limits_of = ctx.limits
    pool_cards, pool_ready = ledger.pool_cards, ledger.pool_ready
    d_total = 0
    for pool, (d_cards, d_ready) in deltas.items():
        d_total += d_cards
        limits = limits_of.get(pool)
        if limits is None:
            continue
        cards, ready = pool_cards.get(pool, 0), pool_ready.get(pool, 0)
        new_cards, new_ready = cards + d_cards, ready + d_ready
        if new_cards > limits.max_cards and new_cards > cards:
            upper = old + (max(limits.max_cards, cards) - cards) // unit if unit else None
            denials.append(
                Denial(
                    MAX_CARDS,
                    f"pool {pool} would ask for {new_cards} cards, above its max_cards "
                    f"{limits.max_cards}",
                    upper=upper,
                )
            )
        if new_cards < limits.min_cards and new_cards < cards:
            lower = old - (cards - min(limits.min_cards, cards)) // unit if unit else None
            denials.append(
                Denial(
                    MIN_CARDS,
                    f"pool {pool} would keep {new_cards} cards, below its min_cards "
                    f"{limits.min_cards}",
                    lower=lower,
                )
            )
        need = limits.min_ready_replicas
        if new_ready < need and new_ready < ready:
            lower = min(need, ready) - (ready - ready_w) if scale is not None else None
            denials.append(
                Denial(
                    MIN_READY,
                    f"serving pool {pool} would keep {new_ready} ready replica(s), fewer than "
                    f"the {need} it must keep",
                    lower=lower,
                )
            )
        if limits.idle_before_zero is not None and new_cards <= 0 < cards:
            why = _not_idle_enough(pool, ctx)
            if why:
                lower = old - (cards + unit - 1) // unit + 1 if unit else None
                denials.append(Denial(IDLE_BEFORE_ZERO, why, lower=lower))
    budget = ctx.total_cards
    total = ledger.total_cards
    new_total = total + d_total
    if budget is not None and new_total > budget and new_total > total:
        upper = old + (max(budget, total) - total) // unit if unit else None
        denials.append(
            Denial(
                TOTAL_CARDS,
                f"all pools together would ask for {new_total} cards, above the total budget "
                f"of {budget}",
                upper=upper,
            )
        )
    return denials


def _not_idle_enough(pool: str, ctx: Context) -> str:
    """Why the pool may not go to zero yet, or '' if it has been idle long enough."""
    limits = ctx.policy.pools[pool]
    wait = limits.idle_before_zero
    assert wait is not None
    needed = format_duration(wait)
    busy = pool_busy(ctx.state, pool, ctx.policy)
    if busy is None:
        return (
            f"cannot tell whether pool {pool} is idle (no fresh queue depth or card "
            f"utilization); it goes to zero only after {needed} seen idle"
        )
    if busy:
        return f"pool {pool} is busy now; it may go to zero after {needed} idle"
    since = ctx.history.idle_since(pool)
    if since is None:
        return f"pool {pool} has not been watched yet; it may go to zero after {needed} seen idle"
    idle = ctx.now - since
    if idle >= wait:
        return ""
    ready_at = ctx.policy.local(since + wait)
    return (
        f"pool {pool} has been idle for {format_duration(max(idle, timedelta(0)))} of the {needed} "
        f"required; it may go to zero from {ready_at:%H:%M %Z}"
    )
