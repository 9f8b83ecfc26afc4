"""Where an answer comes from and who gave it: the `ApprovalChannel` seam and the CLI's channel.

An approval is only as good as the identity behind it, and the identity is the channel's to
vouch for, not the person's to claim. A channel turns what it knows — the OS user running
`steward approve`, the user id a signed Slack request carries — into an `Identity`: the channel
(`cli`, `slack`), the sender it vouches for, and the principal the policy's approver groups
name. The decision log keeps all three with the answer.

The CLI's channel answers as the OS user. `--as NAME` lets a person answer under a name the
policy knows (the shared `homelab-owner`), and only such a name: NAME must be a member of one
of the policy's approver groups (its allow-list), and the log still says which OS user sent it.
A Slack channel (agent/chatops/) implements the same Protocol with channel="slack" and the
Slack user id as sender and principal.
"""

from __future__ import annotations

import getpass
from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from policies.model import Policy
from tools.actions import Action
from tools.approval import Channel
from tools.errors import InvalidInput


class Identity(BaseModel):
    """Who answers, as a channel vouches for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    channel: Channel
    sender: str = Field(min_length=1)
    """Who the channel says sent the answer: the OS user, the chat user id."""
    principal: str = Field(min_length=1)
    """The name the answer counts under, as the policy's approver groups list members."""


class ApprovalChannel(Protocol):
    """A way for people to answer waiting decisions (the CLI, Slack)."""

    @property
    def channel(self) -> Channel: ...

    def identify(self, claimed: str | None, policy: Policy) -> Identity:
        """The identity of the person answering; `claimed` is a name they ask to answer as.

        Raises InvalidInput when the claim is not one the channel may grant."""
        ...


class CliChannel:
    """`steward approve` / `deny`: the OS user, or `--as` a member of the policy's allow-list."""

    def __init__(self, user: str | None = None) -> None:
        self.user = user or getpass.getuser()

    @property
    def channel(self) -> Channel:
        return "cli"

    def identify(self, claimed: str | None, policy: Policy) -> Identity:
        if claimed is None or claimed == self.user:
            return Identity(channel="cli", sender=self.user, principal=self.user)
        allowed = policy.approvers.allow_list()
        if claimed not in allowed:
            listed = ", ".join(sorted(allowed)) or "none"
            raise InvalidInput(
                f"--as {claimed}: not a member of any approver group of the policy (members: "
                f"{listed}); answer as yourself ({self.user}) or --as one of them"
            )
        return Identity(channel="cli", sender=self.user, principal=claimed)

    def claim_for(self, actions: Sequence[Action], policy: Policy) -> str | None:
        """The name `steward approve` must be given with `--as` for this user to answer
        `actions`: None when the OS user may answer them itself, else the first member of the
        approver groups they need (None too when those groups have no member)."""
        if all(policy.may_approve(self.user, a) for a in actions):
            return None
        groups = policy.approvers.groups
        for action in actions:
            for name in policy.approver_groups(action, None):
                group = groups.get(name)
                if group is not None and group.members:
                    return group.members[0]
        return None
