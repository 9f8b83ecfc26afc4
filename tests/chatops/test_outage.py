"""Slack down: the agent keeps deciding, notifications wait in the outbox and arrive after;
a flood of them is folded into a digest instead of filling the channel."""

from __future__ import annotations

import socket
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from slack_sdk import WebClient

from agent.chatops.notifier import SlackNotifier
from agent.chatops.sender import Sender
from agent.chatops.store import DB_NAME, ChatopsStore
from agent.daemon.slack_settings import SlackSettings
from agent.support import pause
from agent.support.notices import Notice
from tests.chatops.conftest import OWNER, Rig, open_rig, settings_for
from tests.chatops.slack_stub import BOT_TOKEN, SlackStub


def _outbox(data_dir: Path) -> list[tuple[str, float | None]]:
    with sqlite3.connect(data_dir / DB_NAME) as conn:
        rows = conn.execute("SELECT notice, sent_at FROM outbox ORDER BY id").fetchall()
    return [(Notice.model_validate_json(n).text, sent) for n, sent in rows]


@pytest.fixture
def quick_rig(tmp_path: Path, stub: SlackStub, secrets: None) -> Rig:
    return open_rig(tmp_path / "steward", stub, retry_max_s=0.5)


def test_ten_minutes_without_slack(quick_rig: Rig) -> None:
    rig = quick_rig
    try:
        rig.stub.down = True
        reports = []
        for i in range(40):  # 10 simulated minutes, paused and resumed in the middle
            if i == 20:
                pause.pause(rig.data_dir, pause.Pause(by="homelab-owner", at=datetime.now(UTC)))
            if i == 30:
                pause.resume(rig.data_dir)
            reports.append(rig.runtime.tick(15.0))
        assert len(reports) == 40 and rig.runtime.ctx.telemetry.tick_count == 40
        assert max(r.seconds for r in reports) < 2.0  # no tick waited on Slack
        waiting = [r.decision_id for r in reports if r.waiting]
        assert waiting, "the spike made a decision wait for approval"
        queued = _outbox(rig.data_dir)
        assert queued and all(sent is None for _, sent in queued)
        tried = rig.stub.of("chat.postMessage")
        assert tried, "the sender kept trying while Slack was down"
        rig.stub.down = False
        rig.stub.wait_for(lambda: all(sent is not None for _, sent in _outbox(rig.data_dir)))
        after = [c.params["text"] for c in rig.stub.of("chat.postMessage")[len(tried) :]]
        for text, _ in queued:
            assert any(text in posted for posted in after), f"lost: {text}"
        rig.approval_message(waiting[0])
        assert rig.slash(f"approve {waiting[0]}", OWNER) == 200
        rig.stub.wait_for(lambda: rig.pending(waiting[0]).status == "approved")
        assert rig.runtime.tick(15.0).resumed == (waiting[0],)
    finally:
        rig.close()


def test_a_flood_of_notices_becomes_a_digest(tmp_path: Path, stub: SlackStub) -> None:
    settings = settings_for(stub).model_copy(update={"max_messages_per_minute": 5})
    store = ChatopsStore.open(tmp_path)
    client = WebClient(token=BOT_TOKEN, base_url=stub.api_url)
    sender = Sender(settings, client, store, tmp_path)
    notifier = SlackNotifier(store, sender.wake)
    at = datetime.now(UTC)
    for i in range(30):  # a signal flapping every tick
        kind = "finding_appeared" if i % 2 == 0 else "finding_cleared"
        notifier.notify(Notice(kind=kind, text=f"burst-llm: queue flap {i}", at=at))
    sender.run_once()
    posted = [c.params["text"] for c in stub.of("chat.postMessage")]
    assert len(posted) == 5
    assert "digest of 26 notifications" in posted[-1]
    assert all(f"flap {i}" in "\n".join(posted) for i in range(20))
    assert "and 6 more" in posted[-1]
    assert store.unsent() == 0
    sender.run_once()  # the window is spent: nothing more is sent within the minute
    notifier.notify(Notice(kind="paused", text="paused by U0OWNER", at=at))
    sender.run_once()
    assert len(stub.of("chat.postMessage")) == 5 and store.unsent() == 1
    store.close()


def test_an_unreachable_slack_keeps_the_notices(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    settings = SlackSettings(enabled=True, channel="C0STEWARD", retry_max_s=0.2,
                             api_url=f"http://127.0.0.1:{closed}/api/")  # fmt: skip
    store = ChatopsStore.open(tmp_path)
    sender = Sender(settings, WebClient(token=BOT_TOKEN, base_url=settings.api_url), store,
                      tmp_path)  # fmt: skip
    SlackNotifier(store, sender.wake).notify(
        Notice(kind="action_failed", text="scale burst-llm: refused", at=datetime.now(UTC))
    )
    sender.run_once()
    time.sleep(0.25)
    sender.run_once()
    row = (
        sqlite3.connect(tmp_path / DB_NAME).execute("SELECT attempts, error FROM outbox").fetchone()
    )
    assert store.unsent() == 1 and row[0] == 2 and "unreachable" in row[1]
    store.close()


def test_socket_mode_connects_once_slack_is_back(
    tmp_path: Path, stub: SlackStub, secrets: None
) -> None:
    stub.down = True
    rig = open_rig(tmp_path / "steward", stub, mode="socket")
    try:
        reports = [rig.runtime.tick(15.0) for _ in range(8)]  # the agent does not wait for it
        assert len(reports) == 8 and rig.stub.connected() == 0
        assert rig.stub.of("apps.connections.open"), "it tried to connect"
        rig.stub.down = False
        rig.stub.wait_for(rig.stub.connected, timeout=30)
    finally:
        rig.close()
