"""Approval rules: which actions need a human now, and which groups may give it.

A rule applies when it covers the action (type, pools, direction) and its window, if any,
contains the current local time; a rule with `serving_protected` applies only to an action on a
node where a protected workload has a replica; one with `except_own_cordons` not to a node
Steward itself cordoned; one with `proposed_by: model` only to what a language model proposed;
one with `protected_or_serving` only to a protected workload or one of a serving pool. Rule
ids: approval.<name> (e.g. approval.rotate_working_hours, approval.cordon_protected_node).
"""

from __future__ import annotations

from policies.model import ApprovalRule
from policies.rules.context import Context
from tools.actions import Action
from tools.effects import workload_of


def required(action: Action, ctx: Context) -> list[ApprovalRule]:
    """The approval rules in force for `action` at ctx.now."""
    rules = ctx.active_approvals.get(action.type, ())
    return [
        rule
        for rule in rules
        if rule.matches(action, ctx.state)
        and (not rule.serving_protected or serves_protected(action, ctx))
        and (not rule.except_own_cordons or not own_cordon(action, ctx))
        and (rule.proposed_by == "anyone" or ctx.proposed_by_model)
        and (not rule.protected_or_serving or protected_or_serving(action, ctx))
    ]


def own_cordon(action: Action, ctx: Context) -> bool:
    """Whether the node `action` names is cordoned by Steward itself (not by a person)."""
    name = getattr(action, "node", None) if action.type in _NODE_ACTIONS else None
    node = ctx.state.node(name) if isinstance(name, str) else None
    return node is not None and node.cordoned and node.cordoned_by_steward


def protected_or_serving(action: Action, ctx: Context) -> bool:
    """Whether the workload `action` names is protected or of a serving pool (one that keeps
    min_ready_replicas)."""
    name = workload_of(action)
    workload = ctx.state.workload(name) if isinstance(name, str) else None
    if workload is None:
        return False
    limits = ctx.limits.get(workload.pool)
    return workload.name in ctx.protected or (limits is not None and limits.min_ready_replicas > 0)


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
