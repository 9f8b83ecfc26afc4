"""Cooldowns: the least time between two actions on the same thing.

`cooldowns.by_action[type]` spaces actions of that type on one key (see policies.effects);
`cooldowns.by_target[name]` spaces any two actions on that target. Executed actions stamped
later than `now` (a clock that went back) count as just done. Within one plan, a second action
on a key already changed by the plan is denied as plan.duplicate_target.

Rule ids: cooldown.<action type> (e.g. cooldown.scale_workload), cooldown.target,
plan.duplicate_target.
"""

from __future__ import annotations

from datetime import timedelta

from policies.durations import format_duration
from policies.effects import action_key
from policies.history import Executed
from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger
from tools.actions import Action

DUPLICATE = "plan.duplicate_target"
BY_TARGET = "cooldown.target"


def check(action: Action, ctx: Context, ledger: Ledger) -> list[Denial]:
    key = action_key(action)
    if not key:
        return []
    denials = []
    earlier = ledger.keys.get(key)
    if earlier is not None:
        denials.append(
            Denial(
                DUPLICATE,
                f"{_thing(key)} is already changed by action #{earlier + 1} of this plan "
                "(one change per thing per plan)",
            )
        )
    action_type = action.type
    by_type = ctx.cooldown_by_type.get(action_type)
    if by_type:
        last = ctx.history.last_on(key, action_type)
        if last is not None:  # nothing done on it yet: nothing cooling (the usual case)
            denial = _cooling(f"cooldown.{action_type}", action, last, by_type, ctx)
            if denial:
                denials.append(denial)
    targets = ctx.cooldown_by_target
    by_target = targets.get(action.target) if targets else None
    if by_target:
        last = ctx.history.last_on(key)
        denial = _cooling(BY_TARGET, action, last, by_target, ctx) if last is not None else None
        if denial:
            denials.append(denial)
    return denials


def _cooling(
    rule_id: str, action: Action, last: Executed, cooldown: timedelta, ctx: Context
) -> Denial | None:
    done = min(last.at, ctx.now)
    if ctx.now - done >= cooldown:
        return None
    what = (
        f"any action on {action.target}"
        if rule_id == BY_TARGET
        else (f"{action.type} on {action.target}")
    )
    again = ctx.policy.local(done + cooldown)
    return Denial(
        rule_id,
        f"{what} is cooling down: last at {ctx.policy.local(last.at):%H:%M %Z}, cooldown "
        f"{format_duration(cooldown)}; allowed again from {again:%H:%M %Z}",
        retry_at=done + cooldown,
    )


def _thing(key: str) -> str:
    kind, _, name = key.partition(":")
    return f"{kind} {name}" if name else "the serving mode"
