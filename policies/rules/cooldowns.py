"""Cooldowns: the least time between two actions on the same thing.

`cooldowns.by_action[type]` spaces actions of that type on one key (see tools.effects);
`cooldowns.by_target[name]` spaces any two actions on that target. Executed actions stamped
later than `now` (a clock that went back) count as just done. Within one plan, a second action
on a key already changed by the plan is denied as plan.duplicate_target.

`cooldowns.by_direction` spaces scales of one workload by the direction of the new one: the last
scale_workload or place_replica on it, either way, must be `scale_up` (or `scale_down`) ago.

Rule ids: cooldown.<action type> (e.g. cooldown.scale_workload), cooldown.target,
cooldown.scale_up, cooldown.scale_down, plan.duplicate_target.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from policies.durations import format_duration
from policies.history import Executed
from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger
from tools.actions import Action
from tools.effects import action_key, direction

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
    by_direction = ctx.policy.cooldowns.by_direction
    if by_direction and action_type in ("scale_workload", "place_replica"):
        denial = _by_direction(action, key, by_direction, ctx)
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


def _by_direction(
    action: Action, key: str, by_direction: Mapping[Any, timedelta], ctx: Context
) -> Denial | None:
    moved = direction(action, ctx.state)
    name = "scale_up" if moved == "up" else "scale_down" if moved in ("down", "to_zero") else ""
    cooldown = by_direction.get(name) if name else None
    if not cooldown:
        return None
    scales = [ctx.history.last_on(key, t) for t in ("scale_workload", "place_replica")]
    done = [e for e in scales if e is not None]
    if not done:
        return None
    last = max(done, key=lambda e: e.at)
    return _cooling(f"cooldown.{name}", action, last, cooldown, ctx)


def _cooling(
    rule_id: str, action: Action, last: Executed, cooldown: timedelta, ctx: Context
) -> Denial | None:
    done = min(last.at, ctx.now)
    if ctx.now - done >= cooldown:
        return None
    if rule_id == BY_TARGET:
        what = f"any action on {action.target}"
    elif rule_id in ("cooldown.scale_up", "cooldown.scale_down"):
        what = f"a {rule_id.removeprefix('cooldown.').replace('_', '-')} of {action.target}"
    else:
        what = f"{action.type} on {action.target}"
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
