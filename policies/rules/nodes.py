"""Nodes a pool or a mode cannot do without: never cordon or drain the last of them.

A pool that keeps a minimum (min_cards or min_ready_replicas above zero) needs somewhere to run:
its nodes are those its replicas run on and, when it names card models, those that carry one.
Cordoning or draining the last schedulable one of them — counting what the plan cordoned or
drained before — is denied, and so is taking the last schedulable node of a serving mode's node
group (a mode with no node left cannot serve, nor be rotated back to). Before this rule the
default policy let a planner cordon every node, both GX10 included, without approval.
Rule ids: nodes.last_of_pool, nodes.last_of_mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

from policies.rules.context import Context, holds, nodes_of
from policies.rules.ledger import Denial, Ledger
from tools import actions
from tools.actions import Action
from tools.effects import Effect

LAST_OF_POOL = "nodes.last_of_pool"
LAST_OF_MODE = "nodes.last_of_mode"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    match action:
        case actions.CordonNode():
            if not ledger.schedulable(action.node):
                return []  # already out of service: cordoning it takes nothing away
        case actions.DrainNode():
            pass
        case (
            actions.ScaleWorkload()
            | actions.PlaceReplica()
            | actions.UncordonNode()
            | actions.RotateMode()
            | actions.NoOp()
        ):
            return []  # takes no node out of service
        case _:
            assert_never(action)
    node = action.node
    denials = []

    def others_left(nodes: Iterable[str]) -> bool:
        return any(n != node and _available(n, ctx, ledger) for n in nodes)

    for pool in ctx.pools_kept:
        if not holds(ctx, pool, node):
            continue
        if not others_left(nodes_of(ctx, pool)):
            limits = ctx.policy.pools[pool]
            keeps = (
                f"{limits.min_ready_replicas} ready replica(s)"
                if limits.min_ready_replicas
                else f"{limits.min_cards} card(s)"
            )
            denials.append(
                Denial(
                    LAST_OF_POOL,
                    f"{node} is the last schedulable node of pool {pool}, which keeps at least "
                    f"{keeps}: taking it leaves the pool nowhere to run",
                )
            )
    for mode in ctx.state.modes:
        if node in mode.nodes and not others_left(mode.nodes):
            denials.append(
                Denial(
                    LAST_OF_MODE,
                    f"{node} is the last schedulable node of mode {mode.name}: taking it "
                    "leaves every node of the mode out of service",
                )
            )
    return denials


def _available(name: str, ctx: Context, ledger: Ledger) -> bool:
    """Schedulable after the plan so far: not cordoned by it, ready, no NoSchedule taint (as
    observed, or once uncordoned: a cordon the plan lifts)."""
    facts = ctx.state.node_facts(name)
    return facts is not None and facts.serviceable and ledger.schedulable(name, facts)
