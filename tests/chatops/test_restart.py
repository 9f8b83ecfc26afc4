"""kill -9 of the daemon with an approval pending: after the restart the same button works, once.

The daemon is `steward run` in its own process, in HTTP mode on a loopback port, configured by
environment only (STEWARD_SLACK_*, SLACK_*), its Web API pointed at the stub. The policy names
the Slack user as an owner directly (a member id, as `steward approve --as` would pass it).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agent.approvals.inbox import Inbox
from agent.audit import ApprovalRecord, AuditLog, Outcome
from agent.chatops.store import ChatopsStore
from tests.chatops.conftest import APPROVE_BURST, OWNER, SPIKE, post_event, press_body
from tests.chatops.slack_stub import (
    APP_TOKEN,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    Call,
    SlackStub,
    sign,
)

ROOT = Path(__file__).parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _daemon(
    data_dir: Path, policy: Path, scenario: Path, port: int, stub: SlackStub
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "STEWARD_SLACK_ENABLED": "true",
        "STEWARD_SLACK_MODE": "http",
        "STEWARD_SLACK_CHANNEL": CHANNEL,
        "STEWARD_SLACK_API_URL": stub.api_url,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_APP_TOKEN": APP_TOKEN,
    }
    args = [sys.executable, "-m", "agent.cli", "run", "--data-dir", str(data_dir),
            "--policy", str(policy), "--scenario", str(scenario), "--port", str(port),
            "--speed", "30", "--interval", "15"]  # fmt: skip
    log = (data_dir.parent / "daemon.log").open("ab")  # read when a check fails
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=log)


def _status(data_dir: Path, decision: str) -> str:
    inbox = Inbox.open(data_dir)
    try:
        found = inbox.get(decision)
    finally:
        inbox.close()
    return found.status if found else "absent"


def _message_ts(data_dir: Path, decision: str) -> str | None:
    store = ChatopsStore.open(data_dir)
    try:
        found = store.message(decision)
    finally:
        store.close()
    return found.ts if found else None


def _approval_posts(stub: SlackStub, decision: str | None = None) -> list[Call]:
    return [
        c
        for c in stub.of("chat.postMessage")
        if c.params.get("blocks")
        and "waits for approval" in c.params.get("text", "")
        and (decision is None or decision in c.params["text"])
    ]


def _ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.mark.slow
def test_the_button_works_once_after_a_kill_9(tmp_path: Path, stub: SlackStub) -> None:
    data_dir = tmp_path / "steward"
    policy = tmp_path / "policy.yaml"
    owners = f"[homelab-owner, {OWNER}]"
    policy.write_text(APPROVE_BURST.read_text().replace("[homelab-owner]", owners))
    scenario = tmp_path / "spike.yaml"
    scenario.write_text(json.dumps(SPIKE.model_dump(mode="json")))
    port = _free_port()
    daemon = _daemon(data_dir, policy, scenario, port, stub)
    try:
        posted = stub.wait_for(lambda: _approval_posts(stub), timeout=60)
        decision = posted[0].params["blocks"][-1]["block_id"].split(":")[1]
        ts = stub.wait_for(lambda: _message_ts(data_dir, decision))
    finally:
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.wait(10)
    assert _status(data_dir, decision) == "waiting"
    port = _free_port()
    daemon = _daemon(data_dir, policy, scenario, port, stub)
    try:
        stub.wait_for(lambda: _ready(port), timeout=60)
        body = press_body(decision, OWNER, ts, approve=True)
        assert post_event(port, body, sign(body)) == 200
        stub.wait_for(lambda: _status(data_dir, decision) == "resumed", timeout=60)
        again = press_body(decision, OWNER, ts, approve=True, pressed_at="1764000099.2")
        assert post_event(port, again, sign(again)) == 200
        stub.wait_for(
            lambda: [c for c in stub.of("chat.postEphemeral") if "already" in c.params["text"]]
        )
        updates = [c.params["text"] for c in stub.of("chat.update") if c.params.get("ts") == ts]
        assert any(f"approved by <@{OWNER}>" in u for u in updates)
        with AuditLog.open(data_dir, readonly=True) as log:
            records = log.decision(decision)
        approval = next(r.payload for r in records if isinstance(r.payload, ApprovalRecord))
        assert approval.channel == "slack" and approval.principal == OWNER and ts in approval.note
        outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
        assert outcome.results[0].executed and outcome.results[0].ok
        # The restart found the message it had posted: no second one for the same decision.
        assert len(_approval_posts(stub, decision)) == 1
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
