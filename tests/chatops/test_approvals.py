"""Approvals from Slack: the button press answers the inbox, the next tick runs or drops it."""

from __future__ import annotations

from agent.audit import ApprovalRecord, Outcome
from tests.chatops.conftest import OUTSIDER, OWNER, Rig


def _updates(rig: Rig, ts: str, words: str) -> list[str]:
    return [
        c.params["text"]
        for c in rig.stub.of("chat.update")
        if c.params.get("ts") == ts and words in c.params.get("text", "")
    ]


def _ephemeral(rig: Rig, user: str, words: str) -> list[str]:
    return [
        c.params["text"]
        for c in rig.stub.of("chat.postEphemeral")
        if c.params.get("user") == user and words in c.params.get("text", "")
    ]


def test_an_approval_from_slack_runs_on_the_next_tick(rig: Rig) -> None:
    decision = rig.tick_until_waiting()
    ts = rig.approval_message(decision)
    posted = next(
        c for c in rig.stub.of("chat.postMessage") if "waits for approval" in c.params["text"]
    )
    buttons = posted.params["blocks"][-1]["elements"]
    assert [b["action_id"] for b in buttons] == ["steward_approve", "steward_deny"]

    assert rig.press(decision, OUTSIDER, ts, approve=True) == 200
    rig.stub.wait_for(lambda: _ephemeral(rig, OUTSIDER, "may not answer"))
    assert rig.pending(decision).status == "waiting"

    assert rig.press(decision, OWNER, ts, approve=True) == 200
    rig.stub.wait_for(lambda: _updates(rig, ts, f"approved by <@{OWNER}>"))
    assert rig.pending(decision).status == "approved"
    assert rig.press(decision, OWNER, ts, approve=False) == 200
    rig.stub.wait_for(lambda: _ephemeral(rig, OWNER, "already approved"))

    report = rig.runtime.tick(15.0)
    assert report.resumed == (decision,)
    records = rig.runtime.ctx.audit.decision(decision)
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert approval.approved and approval.channel == "slack" and approval.principal == OWNER
    assert approval.note == f"Slack message C0STEWARD/{ts}"
    outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
    assert outcome.results[0].executed and outcome.results[0].ok
    burst = rig.runtime.ctx.cluster.observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas >= 1
    rig.stub.wait_for(lambda: _updates(rig, ts, "ran: ok"))


def test_a_deny_from_slack_drops_the_decision(rig: Rig) -> None:
    decision = rig.tick_until_waiting()
    ts = rig.approval_message(decision)
    assert rig.slash(f"deny {decision} not during the demo", OWNER) == 200
    rig.stub.wait_for(lambda: _updates(rig, ts, "denied by"))
    report = rig.runtime.tick(15.0)
    assert report.resumed == (decision,)
    records = rig.runtime.ctx.audit.decision(decision)
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert not approval.approved and approval.channel == "slack" and approval.principal == OWNER
    assert approval.note == "not during the demo (Slack command in channel C0STEWARD)"
    outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
    assert not outcome.results[0].executed
    burst = rig.runtime.ctx.cluster.observe().workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 0
    rig.stub.wait_for(lambda: _updates(rig, ts, "not run"))
