"""Answering a waiting decision: the one path every channel takes (`steward approve`, Slack).

`answer_decision` checks that the decision waits, that the principal is allowed by the policy's
approver groups to answer every action it holds (judged on a fresh observation, so rules
filtered by pool or direction match), and then writes the answer to the inbox. The daemon
resumes the decision on its next tick and judges it again there; nothing here runs an action.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from agent.approvals.inbox import Channel, Inbox, PendingDecision
from policies.model import Policy
from tools.errors import PermanentError
from tools.model import ClusterState


class NotAllowed(PermanentError):
    """The principal is in none of the approver groups the decision's actions need."""


def answer_decision(
    inbox: Inbox,
    policy: Policy,
    observe: Callable[[], ClusterState],
    decision_id: str,
    *,
    approved: bool,
    principal: str,
    reason: str,
    at: datetime,
    channel: Channel = "cli",
) -> PendingDecision:
    """Record `principal`'s answer; InvalidInput when nothing waits under that id (unknown or
    already answered), NotAllowed when the principal may not answer it."""
    found = inbox.get(decision_id)
    if found is not None and found.status == "waiting":
        state = observe()
        refused = [a for a in found.actions if not policy.may_approve(principal, a, state)]
        if refused:
            groups = sorted({g for a in refused for g in policy.approver_groups(a, state)})
            raise NotAllowed(
                f"{principal} may not answer decision {decision_id}: "
                f"{'; '.join(a.describe() for a in refused)} needs a member of "
                f"{', '.join(groups) or 'an approver group'} (policy approvers)"
            )
    # Raises the error that names what is wrong when nothing waits: unknown, or answered.
    return inbox.answer(
        decision_id, approved=approved, by=principal, reason=reason, at=at, channel=channel
    )
