"""Which rules can speak to each action type: the checks judged on a ledger, by action type.

Every such rule reads the action, its effect and the ledger it is judged on, and most of them
say nothing about most types (a placement's node selector means nothing to a scale). The engine
runs only the checks listed for the action's type, in this order (the order of their denials in
a verdict); a type not listed is no action Steward knows and never gets this far
(policies.rules.targets denies it).
"""

from __future__ import annotations

from collections.abc import Callable

from policies.rules import nodes, placement, pools, protection, slo
from policies.rules.context import Context
from policies.rules.ledger import Denial, Effect, Ledger
from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)

LedgerCheck = Callable[[Action, Effect, Context, Ledger], list[Denial]]

ON_LEDGER: dict[type[Action], tuple[LedgerCheck, ...]] = {
    ScaleWorkload: (pools.check, protection.check, slo.check),
    PlaceReplica: (pools.check, protection.check, placement.check),
    DrainNode: (pools.check, protection.check, nodes.check),
    CordonNode: (nodes.check,),  # no replica changes: pools and protection have nothing to say
    UncordonNode: (),  # adds a node back: no rule judged on a ledger stops it
    RotateMode: (pools.check, protection.check),
}
"""Action type -> the rules judged on each ledger for it (see the module docstring)."""
