"""Protected workloads: never scaled below their current replicas, their nodes never drained.

A rotation that would stop a protected workload counts as scaling it down.
Rule ids: protected.never_below_current, protected.never_drained.
"""

from __future__ import annotations

from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger
from tools.actions import Action, DrainNode, ScaleWorkload
from tools.effects import Effect

NEVER_BELOW_CURRENT = "protected.never_below_current"
NEVER_DRAINED = "protected.never_drained"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    protected = ctx.protected
    if not protected:
        return []
    if type(action) is DrainNode:
        hosted = sorted(
            w.name for w, _, there in ctx.on_node.get(action.node, []) if w.name in protected
        )
        if hosted:
            return [
                Denial(
                    NEVER_DRAINED,
                    f"{action.node} runs protected workload {', '.join(hosted)}; "
                    "its nodes are never drained",
                )
            ]
        return []
    denials = []
    for change in effect.changes:
        w = change.workload
        current = ledger.desired_of(w)
        if w.name in protected and change.desired < current:
            lower = current if type(action) is ScaleWorkload else None
            denials.append(
                Denial(
                    NEVER_BELOW_CURRENT,
                    f"{w.name} is protected: it is never scaled below its current "
                    f"{current} replica(s)",
                    lower=lower,
                )
            )
    return denials
