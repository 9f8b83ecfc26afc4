"""Quiet hours and maintenance windows: only scale-ups, or nothing at all.

Inside a window with `allow: scale_up_only` an action must add capacity (scale up, place a
replica, uncordon); inside `allow: nothing` every action but NoOp is denied.
Rule ids: window.<name> (e.g. window.quiet_hours).
"""

from __future__ import annotations

from policies.rules.context import Context
from policies.rules.ledger import Denial
from tools.actions import Action
from tools.effects import direction


def check(action: Action, ctx: Context) -> list[Denial]:
    denials = []
    for window in ctx.active_windows:
        if window.allow == "nothing":
            denials.append(
                Denial(window.rule_id, f"{window.name} ({window.describe()}): no changes now")
            )
        elif direction(action, ctx.state) != "up":
            denials.append(
                Denial(
                    window.rule_id,
                    f"{window.name} ({window.describe()}): only scale-ups now",
                )
            )
    return denials
