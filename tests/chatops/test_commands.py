"""`/steward …` and mentions over Socket Mode: answers with the CLI's facts, long ones threaded;
anyone may ask, only approvers may steer."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest

from agent.audit import ApprovalRecord
from agent.daemon import runtime as runtime_module
from lab.sim.scenario import Scenario
from tests.chatops.conftest import OUTSIDER, OWNER, Rig, open_rig, press_payload, slash_body
from tests.chatops.slack_stub import CHANNEL, Call, SlackStub

_ids = itertools.count(1)


@pytest.fixture
def socket_rig(tmp_path: Path, stub: SlackStub, secrets: None) -> Iterator[Rig]:
    opened = open_rig(tmp_path / "steward", stub, mode="socket")
    try:
        stub.wait_for(stub.connected)
        assert stub.of("apps.connections.open")[0].token.startswith("xapp-")
        yield opened
    finally:
        opened.close()


def _envelope(rig: Rig, kind: str, payload: dict[str, Any]) -> None:
    envelope_id = f"env-{next(_ids)}"
    rig.stub.push({"envelope_id": envelope_id, "type": kind, "payload": payload,
                   "accepts_response_payload": kind != "events_api", "retry_attempt": 0,
                   "retry_reason": ""})  # fmt: skip
    rig.stub.wait_for(lambda: any(a.get("envelope_id") == envelope_id for a in rig.stub.acks))


def command(rig: Rig, text: str, user: str) -> None:
    _envelope(rig, "slash_commands", dict(parse_qsl(slash_body(text, user))))


def _said(rig: Rig, method: str, words: str, user: str | None = None) -> list[Call]:
    return [
        c
        for c in rig.stub.of(method)
        if words in c.params.get("text", "") and (user is None or c.params.get("user") == user)
    ]


def answer(rig: Rig, words: str) -> Call:
    found: list[Call] = rig.stub.wait_for(lambda: _said(rig, "chat.postMessage", words))
    return found[-1]


def refusal(rig: Rig, user: str, words: str) -> Call:
    found: list[Call] = rig.stub.wait_for(lambda: _said(rig, "chat.postEphemeral", words, user))
    return found[-1]


def test_anyone_may_ask(socket_rig: Rig) -> None:
    rig = socket_rig
    rig.runtime.tick(15.0)
    command(rig, "status", OUTSIDER)
    status = answer(rig, "status at")
    text = "\n".join(b["text"]["text"] for b in status.params["blocks"])
    assert "burst-llm (burst): 0/0 ready" in text and "mode: cluster" in text
    nodes = answer(rig, "node render-1")  # the nodes go to the thread
    assert nodes.params["thread_ts"]
    decision = rig.tick_until_waiting()
    command(rig, "pending", OUTSIDER)
    pending = answer(rig, "waiting for approval")
    assert decision in pending.params["blocks"][1]["text"]["text"]
    command(rig, "plan", OUTSIDER)
    plan = answer(rig, "(dry run)")
    assert plan.params["channel"] == CHANNEL
    command(rig, f"why {decision}", OUTSIDER)
    why = answer(rig, f"decision {decision}")  # a waiting decision is in the log already
    assert "waiting for approval" in json.dumps(why.params["blocks"])


def test_a_long_answer_is_threaded(socket_rig: Rig) -> None:
    rig = socket_rig
    decision = rig.tick_until_waiting()
    command(rig, f"approve {decision}", OWNER)
    rig.stub.wait_for(lambda: rig.pending(decision).status == "approved")
    rig.runtime.tick(15.0)
    command(rig, f"why {decision}", OUTSIDER)
    head = answer(rig, f"decision {decision}: completed")
    assert "more line(s) in the thread" in head.params["blocks"][1]["text"]["text"]

    def thread() -> str:
        return "\n".join(
            c.params["text"] for c in rig.stub.of("chat.postMessage") if c.params.get("thread_ts")
        )

    rig.stub.wait_for(lambda: "check " in thread())  # the explanation's last lines: its checks
    assert f"approved by {OWNER} via slack" in head.params["blocks"][1]["text"]["text"] + thread()


def test_only_approvers_may_steer(socket_rig: Rig) -> None:
    rig = socket_rig
    decision = rig.tick_until_waiting()
    for text in ("pause", "resume", "mode cluster"):
        command(rig, text, OUTSIDER)
        refusal(rig, OUTSIDER, f"may not {text.split()[0]}")
    command(rig, f"approve {decision}", OUTSIDER)
    refusal(rig, OUTSIDER, "may not answer")
    command(rig, f"deny {decision} no", OUTSIDER)
    time.sleep(0.3)
    assert not (rig.data_dir / "pause.json").exists()
    assert rig.pending(decision).status == "waiting"
    assert rig.runtime.tick(15.0).resumed == ()


def test_a_press_and_a_mention_over_the_socket(socket_rig: Rig) -> None:
    rig = socket_rig
    decision = rig.tick_until_waiting()
    ts = rig.approval_message(decision)
    _envelope(rig, "interactive", press_payload(decision, OWNER, ts, approve=True))
    rig.stub.wait_for(lambda: rig.pending(decision).status == "approved")
    assert rig.runtime.tick(15.0).resumed == (decision,)
    records = rig.runtime.ctx.audit.decision(decision)
    approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
    assert approval.channel == "slack" and approval.principal == OWNER
    at = "1764000100.000200"
    event = {"type": "app_mention", "user": OUTSIDER, "text": "<@U0BOT> status",
             "ts": at, "channel": CHANNEL, "event_ts": at}  # fmt: skip
    _envelope(rig, "events_api", {"token": "t", "team_id": "T0TEST", "api_app_id": "A0TEST",
                                  "event": event, "type": "event_callback",
                                  "event_id": "Ev0TEST", "event_time": 1764000100})  # fmt: skip
    reply = answer(rig, "status at")
    assert reply.params["thread_ts"] == at


DAYTIME = Scenario(
    name="daytime-rotation",
    start=datetime(2026, 3, 2, 10, 0, tzinfo=UTC),  # 11:00 in Madrid: rotations need an owner
    mode="cluster",
)


def test_a_mode_request_waits_for_an_owner_then_runs(
    tmp_path: Path, stub: SlackStub, secrets: None
) -> None:
    rig = open_rig(tmp_path / "steward", stub, mode="socket", scenario=DAYTIME)
    try:
        stub.wait_for(stub.connected)
        for _ in range(124):  # past the policy's 30 minutes of dwell in the active mode
            rig.runtime.tick(15.0)
        command(rig, "mode split", OWNER)
        reply = _tick_until(rig, "rotation to split")
        assert reply.params["text"].endswith(": pending")
        assert "approves it with the button" in reply.params["blocks"][1]["text"]["text"]
        decision = reply.params["text"].split("(")[1].split(")")[0]
        ts = rig.approval_message(decision)
        _envelope(rig, "interactive", press_payload(decision, OWNER, ts, approve=True))
        done = _tick_until(rig, f"{decision} approved by <@{OWNER}>; rotation to split")
        assert done.params["text"].endswith(": ran")
        assert rig.runtime.ctx.cluster.observe().active_mode.name == "split"  # type: ignore[union-attr]
        records = rig.runtime.ctx.audit.decision(decision)
        approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
        assert approval.channel == "slack" and approval.principal == OWNER
    finally:
        rig.close()


def test_an_answer_is_dated_by_the_clusters_clock_not_its_last_save(
    tmp_path: Path, stub: SlackStub, secrets: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon saves the simulator once a second at most; an answer given between two saves
    is of the cluster's time, not the saved one (which lagged half an hour and refused an
    approval as expired)."""
    monkeypatch.setattr(runtime_module, "SAVE_EVERY_S", 1e9)  # saved at the start only
    rig = open_rig(tmp_path / "steward", stub, mode="socket", scenario=DAYTIME)
    try:
        stub.wait_for(stub.connected)
        for _ in range(124):
            rig.runtime.tick(15.0)
        command(rig, "mode split", OWNER)
        decision = _tick_until(rig, "rotation to split").params["text"].split("(")[1].split(")")[0]
        now = rig.runtime.parts.clock.now()
        ts = rig.approval_message(decision)
        _envelope(rig, "interactive", press_payload(decision, OWNER, ts, approve=True))
        done = _tick_until(rig, f"{decision} approved by <@{OWNER}>; rotation to split")
        assert done.params["text"].endswith(": ran")
        assert rig.pending(decision).answered_at == now
    finally:
        rig.close()


def _tick_until(rig: Rig, words: str) -> Call:
    """Tick each time Slack's listener hands the tick thread work (a rotation request or its
    answer runs between two ticks), until the channel has the answer. No tick runs while the
    listener is still at work: simulated time must not race the real time it takes (30 minutes
    of ticks would expire the approval it is about to submit)."""
    deadline = time.monotonic() + 60
    while not _said(rig, "chat.postMessage", words):
        said = [(c.method, c.params.get("text")) for c in rig.stub.calls][-4:]
        assert time.monotonic() < deadline, f"no answer with {words!r}; last calls: {said}"
        if rig.runtime.chores.empty():
            time.sleep(0.01)
            continue
        rig.runtime.tick(15.0)
    return _said(rig, "chat.postMessage", words)[-1]
