"""The change budget: actions per sliding hour, and cards changed per plan (the blast radius).

Both count the executed actions and every earlier action of the plan that was allowed or sent
for approval, so that approving everything still stays inside the budget. NoOps are free.

`change_budget.cards_per_hour` counts the cards executed actions changed in the last hour and
those of the plan's earlier actions.

Rule ids: budget.actions_per_hour, budget.cards_per_hour, plan.blast_radius.
"""

from __future__ import annotations

from functools import lru_cache

from policies.rules.context import HOUR, Context
from policies.rules.ledger import Denial, Ledger
from tools.actions import Action, ScaleWorkload
from tools.effects import Effect

ACTIONS_PER_HOUR = "budget.actions_per_hour"
CARDS_PER_HOUR = "budget.cards_per_hour"
BLAST_RADIUS = "plan.blast_radius"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    denials = []
    limit, radius = ctx.change_budget
    if limit is not None:
        done = ctx.done_last_hour
        used = done + ledger.actions
        if used + 1 > limit:
            slot = ctx.history.next_slot(ctx.now, HOUR, limit - ledger.actions)
            when = (
                f"the next slot opens at {ctx.policy.local(slot):%H:%M %Z}"
                if slot is not None and slot > ctx.now
                else "no slot opens before this plan's own actions age"
            )
            denials.append(
                Denial(
                    ACTIONS_PER_HOUR,
                    f"at most {limit} actions per hour: {done} done in the last hour and "
                    f"{ledger.actions} earlier in this plan; {when}",
                    retry_at=slot if slot is not None and slot > ctx.now else None,
                )
            )
    changed = effect.cards_changed
    per_hour = ctx.policy.change_budget.cards_per_hour
    if per_hour is not None and changed:
        since = ctx.now - HOUR
        done = sum(e.cards_changed for e in ctx.history.executed if e.at > since)
        if done + ledger.cards_changed + changed > per_hour:
            denials.append(
                Denial(
                    CARDS_PER_HOUR,
                    f"at most {per_hour} card(s) changed per hour: {done} in the last hour and "
                    f"{ledger.cards_changed} earlier in this plan; this action changes {changed}",
                )
            )
    if radius is not None and ledger.cards_changed + changed > radius:
        left = max(0, radius - ledger.cards_changed)
        lower = upper = None
        if type(action) is ScaleWorkload and effect.changes:
            w = effect.changes[0].workload
            unit = w.cards_per_replica
            if unit:
                step = left // unit
                old = ledger.desired_of(w)
                lower, upper = old - step, old + step
        denials.append(Denial(BLAST_RADIUS, _radius_message(changed, radius, left), lower, upper))
    return denials


@lru_cache(maxsize=256)
def _radius_message(changed: int, radius: int, left: int) -> str:
    """Said once per distinct count: a plan past its blast radius says it for every action."""
    return (
        f"this action changes {changed} card(s) and the plan may change {radius} per tick "
        f"({left} left)"
    )
