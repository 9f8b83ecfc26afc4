"""Requests Slack did not sign, signed too long ago, or sent twice are refused; nothing changes."""

from __future__ import annotations

import time

from tests.chatops.conftest import OWNER, Rig, press_body
from tests.chatops.slack_stub import sign


def _nothing_changed(rig: Rig, decision: str) -> None:
    assert rig.pending(decision).status == "waiting"
    assert not rig.stub.of("chat.update")
    assert not rig.stub.of("chat.postEphemeral")


def test_a_forged_signature_is_refused(rig: Rig) -> None:
    decision = rig.tick_until_waiting()
    ts = rig.approval_message(decision)
    body = press_body(decision, OWNER, ts, approve=True)
    assert rig.post(body, sign(body, secret="not-the-signing-secret")) == 401
    unsigned = {"X-Slack-Request-Timestamp": str(int(time.time()))}
    assert rig.post(body, unsigned) == 401
    tampered = sign(body)
    assert rig.post(body.replace("steward_approve", "steward_deny"), tampered) == 401
    time.sleep(0.3)  # a listener would have run by now
    _nothing_changed(rig, decision)


def test_a_stale_timestamp_is_refused(rig: Rig) -> None:
    decision = rig.tick_until_waiting()
    ts = rig.approval_message(decision)
    body = press_body(decision, OWNER, ts, approve=True)
    assert rig.post(body, sign(body, timestamp=int(time.time()) - 6 * 60)) == 401
    assert rig.post(body, sign(body, timestamp=int(time.time()) + 6 * 60)) == 401
    time.sleep(0.3)
    _nothing_changed(rig, decision)


def test_a_replayed_request_is_refused(rig: Rig) -> None:
    decision = rig.tick_until_waiting()
    ts = rig.approval_message(decision)
    # The first of two identical requests is a deny: were the replay let through, the
    # answer would be refused anyway; an identical status line would hide the difference.
    body = press_body(decision, OWNER, ts, approve=False)
    headers = sign(body)
    assert rig.post(body, headers) == 200
    rig.stub.wait_for(lambda: rig.stub.of("chat.update"))
    assert rig.pending(decision).status == "denied"
    time.sleep(0.3)  # the sender's pass may also have shown the answer
    updates = len(rig.stub.of("chat.update"))
    assert rig.post(body, headers) == 401
    time.sleep(0.3)
    assert not rig.stub.of("chat.postEphemeral")  # the replay reached no listener
    assert len(rig.stub.of("chat.update")) == updates
