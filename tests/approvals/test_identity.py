"""Approver identity comes from the channel: the CLI answers as the OS user, `--as NAME` only for
a member of the policy's allow-list, and the log records channel, sender and principal. A second
channel (Slack's, later) plugs into the same seam with its own user ids."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest

from agent.approvals.channel import ApprovalChannel, CliChannel, Identity
from agent.approvals.inbox import Inbox
from agent.audit import ApprovalRecord
from agent.daemon.answers import submit
from policies.history import History
from policies.loader import load_policy
from policies.model import Policy
from tests.approvals.conftest import cli
from tests.approvals.test_late_approval import wait_for_approval
from tests.loop.conftest import APPROVE_BURST, open_runtime
from tests.loop.test_approval import SPIKE
from tools.approval import Channel
from tools.errors import InvalidInput

SLACK_USER = "U024BE7LH"


class ChatChannel:
    """A channel whose sender is a chat user id, as agent/chatops/ will give it."""

    def __init__(self, user_id: str) -> None:
        self.user_id = user_id

    @property
    def channel(self) -> Channel:
        return "slack"

    def identify(self, claimed: str | None, policy: Policy) -> Identity:
        return Identity(channel="slack", sender=self.user_id, principal=self.user_id)


def test_the_cli_channel_answers_as_the_os_user_or_a_listed_approver() -> None:
    policy = load_policy(APPROVE_BURST)
    channel: ApprovalChannel = CliChannel("alice")
    assert channel.identify(None, policy) == Identity(
        channel="cli", sender="alice", principal="alice"
    )
    assert channel.identify("homelab-owner", policy).sender == "alice"
    with pytest.raises(InvalidInput, match="--as mallory: not a member of any approver group"):
        channel.identify("mallory", policy)


def test_the_os_user_outside_the_groups_may_not_approve(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        decision = wait_for_approval(runtime)
    policy = ("--policy", str(APPROVE_BURST))
    code, out = cli("approve", decision, "--data-dir", str(data_dir), *policy)
    assert getpass.getuser() != "homelab-owner"
    assert code == 1 and f"{getpass.getuser()} may not answer decision {decision}" in out
    code, out = cli(
        "approve", decision, "--as", "nobody", "--data-dir", str(data_dir),
        "--policy", str(APPROVE_BURST),
    )  # fmt: skip
    assert code == 2 and "not a member of any approver group" in out
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(APPROVE_BURST),
    )  # fmt: skip
    assert code == 0, out
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        runtime.tick(15.0)
        records = runtime.ctx.audit.decision(decision)
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert (approval.channel, approval.principal, approval.sender) == (
        "cli",
        "homelab-owner",
        getpass.getuser(),
    )


def test_a_chat_channel_plugs_in_with_its_user_ids(tmp_path: Path, data_dir: Path) -> None:
    text = APPROVE_BURST.read_text().replace(
        "members: [homelab-owner]", f"members: [homelab-owner, {SLACK_USER}]"
    )
    policy_path = tmp_path / "slack.yaml"
    policy_path.write_text(text)
    policy = load_policy(policy_path)
    with open_runtime(data_dir, SPIKE, policy_path) as runtime:
        decision = wait_for_approval(runtime)
        state = runtime.ctx.cluster.observe()
        identity = ChatChannel(SLACK_USER).identify(None, policy)
        done = submit(
            runtime.ctx.inbox, policy, state, History(), decision, approved=True, identity=identity
        )
        assert done.ok and "via slack" in done.message
        runtime.tick(15.0)
        records = runtime.ctx.audit.decision(decision)
        burst = runtime.ctx.cluster.observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 1
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert (approval.channel, approval.principal, approval.sender) == (
        "slack",
        SLACK_USER,
        SLACK_USER,
    )
    inbox = Inbox.open(data_dir)
    try:
        entry = inbox.get(decision)
    finally:
        inbox.close()
    assert entry is not None and entry.channel == "slack" and entry.sender == SLACK_USER
