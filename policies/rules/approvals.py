"""Approval rules: which actions need a human now, and which groups may give it.

A rule applies when it covers the action (type, pools, direction) and its window, if any,
contains the current local time; a rule with `serving_protected` applies only to an action on a
node where a protected workload has a replica. Rule ids: approval.<name> (e.g.
approval.rotate_working_hours, approval.cordon_protected_node).
"""

from __future__ import annotations

from policies.model import ApprovalRule
from policies.rules.context import Context
from tools.actions import Action


def required(action: Action, ctx: Context) -> list[ApprovalRule]:
    """The approval rules in force for `action` at ctx.now."""
    rules = ctx.active_approvals.get(action.type, ())
    return [
        rule
        for rule in rules
        if rule.matches(action, ctx.state)
        and (not rule.serving_protected or serves_protected(action, ctx))
    ]


def serves_protected(action: Action, ctx: Context) -> bool:
    """Whether the node `action` names runs a replica of a protected workload."""
    node = getattr(action, "node", None) if action.type in _NODE_ACTIONS else None
    protected = set(ctx.policy.protected)
    if not isinstance(node, str) or not protected:
        return False
    return any(
        w.name in protected and any(node in r.nodes for r in w.placement)
        for w in ctx.state.workloads
    )


_NODE_ACTIONS = frozenset({"cordon_node", "uncordon_node", "drain_node"})
