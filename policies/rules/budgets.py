"""The change budget: actions per sliding hour, and cards changed per plan (the blast radius).

Both count the executed actions and every earlier action of the plan that was allowed or sent
for approval, so that approving everything still stays inside the budget. NoOps are free.

Rule ids: budget.actions_per_hour, plan.blast_radius.
"""

from __future__ import annotations

from policies.rules.ledger import HOUR, Context, Denial, Effect, Ledger
from tools.actions import Action, ScaleWorkload

ACTIONS_PER_HOUR = "budget.actions_per_hour"
BLAST_RADIUS = "plan.blast_radius"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    denials = []
    budget = ctx.policy.change_budget
    limit = budget.actions_per_hour
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
    radius = budget.cards_per_tick
    if radius is not None and ledger.cards_changed + effect.cards_changed > radius:
        left = max(0, radius - ledger.cards_changed)
        lower = upper = None
        if type(action) is ScaleWorkload and effect.changes:
            w = effect.changes[0].workload
            if w.cards_per_replica:
                step = left // w.cards_per_replica
                old = ledger.desired_of(w)
                lower, upper = old - step, old + step
        denials.append(
            Denial(
                BLAST_RADIUS,
                f"this action changes {effect.cards_changed} card(s) and the plan may change "
                f"{radius} per tick ({left} left)",
                lower=lower,
                upper=upper,
            )
        )
    return denials
