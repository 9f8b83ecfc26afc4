"""Who may do what from Slack: the policy's approver groups, with Slack user ids as members.

`slack.approvers` in steward.yaml names, for each approver group of the policy, the Slack user
ids that belong to it. `with_slack_approvers` adds them to the groups, so the one check the CLI
and the loop already make (`Policy.may_approve`) decides for Slack too, and the decision log
names the Slack user who answered. Steering the agent (pause, resume, a mode) needs membership
of any approver group; asking (status, plan, why, pending) needs nothing.
"""

from __future__ import annotations

from agent.daemon.slack_settings import SlackSettings
from policies.model import Policy
from tools.errors import InvalidInput


def with_slack_approvers(policy: Policy, settings: SlackSettings) -> Policy:
    """`policy` with the Slack user ids of `settings.approvers` added to its groups."""
    groups = dict(policy.approvers.groups)
    for name, users in settings.approvers.items():
        group = groups.get(name)
        if group is None:
            known = ", ".join(sorted(groups)) or "none"
            raise InvalidInput(
                f"slack.approvers.{name}: the policy has no approver group {name!r} "
                f"(groups: {known}); name one of them"
            )
        members = tuple(dict.fromkeys((*group.members, *users)))
        groups[name] = group.model_copy(update={"members": members})
    approvers = policy.approvers.model_copy(update={"groups": groups})
    return policy.model_copy(update={"approvers": approvers})


def may_steer(policy: Policy, user: str) -> bool:
    """Whether `user` may pause, resume or request a mode: a member of any approver group."""
    return any(user in group.members for group in policy.approvers.groups.values())
