"""Approval rules: which actions need a human now, and which groups may give it.

A rule applies when it covers the action (type, pools, direction) and its window, if any,
contains the current local time. Rule ids: approval.<name> (e.g. approval.rotate_working_hours).
"""

from __future__ import annotations

from policies.model import ApprovalRule
from policies.rules.ledger import Context
from tools.actions import Action


def required(action: Action, ctx: Context) -> list[ApprovalRule]:
    """The approval rules in force for `action` at ctx.now."""
    rules = ctx.active_approvals.get(action.type, ())
    return [rule for rule in rules if rule.matches(action, ctx.state)]
