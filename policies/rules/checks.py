"""Which rules can speak to each action type: the checks judged on a ledger, by action type.

Every such rule reads the action, its effect and the ledger it is judged on, and most of them
say nothing about most types (a placement's node selector means nothing to a scale). The engine
runs only the checks listed for the action's type, in this order (the order of their denials in
a verdict); something that is no action Steward knows never gets this far
(policies.rules.targets denies it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from policies.rules import nodes, placement, pools, protection, slo
from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger
from tools import actions
from tools.actions import Action
from tools.effects import Effect

LedgerCheck = Callable[[Action, Effect, Context, Ledger], list[Denial]]


def on_ledger(action: Action) -> tuple[LedgerCheck, ...]:
    """The rules judged on each ledger for `action` (see the module docstring)."""
    match action:
        case actions.ScaleWorkload():
            return (pools.check, protection.check, slo.check)
        case actions.PlaceReplica():
            return (pools.check, protection.check, placement.check)
        case actions.DrainNode():
            return (pools.check, protection.check, nodes.check)
        case actions.CordonNode():
            return (nodes.check,)  # no replica changes: pools and protection have nothing to say
        case actions.UncordonNode():
            return ()  # adds a node back: no rule judged on a ledger stops it
        case actions.RotateMode():
            return (pools.check, protection.check)
        case actions.NoOp():
            return ()  # judged before any ledger (the engine allows it at once)
        case _:
            assert_never(action)
