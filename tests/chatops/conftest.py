"""Shared set-up of the chat-ops tests: the Slack stub, and a daemon's loop with Slack on it.

`Rig` is a runtime over the simulated homelab in which burst placements need an owner's
approval (tests/loop/data/approve-burst.yaml), with chat-ops started as `steward run` starts it
(HTTP mode on the daemon's port, or Socket Mode), its Web API pointed at the stub. `slash` and
`press` send what Slack sends — form bodies signed with the signing secret — to /slack/events.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import structlog

from agent.approvals.inbox import Inbox, PendingDecision
from agent.chatops.access import with_slack_approvers
from agent.chatops.service import SlackService, start_for_daemon
from agent.daemon.config import StewardConfig
from agent.daemon.runtime import Runtime
from agent.daemon.slack_settings import SlackSettings
from agent.planners.base import Planner
from agent.support.telemetry import Telemetry
from lab.sim.backend import SimCluster
from lab.sim.demand import BurstDemand
from lab.sim.scenario import Scenario
from policies.loader import load_policy
from tests.chatops.slack_stub import APP_TOKEN, BOT_TOKEN, CHANNEL, SIGNING_SECRET, SlackStub, sign

APPROVE_BURST = Path(__file__).parents[1] / "loop" / "data" / "approve-burst.yaml"
OWNER = "U0OWNER"
OUTSIDER = "U0VISITOR"
SPIKE = Scenario(
    name="spike-approval",
    replicas={"render": 0, "burst-llm": 0},
    demand=(BurstDemand(target="burst-llm", rate_per_min=60, at_s=20, duration_s=3600),),
)


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    structlog.reset_defaults()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@pytest.fixture
def stub() -> Iterator[SlackStub]:
    server = SlackStub().start()
    yield server
    server.stop()


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    monkeypatch.setenv("SLACK_APP_TOKEN", APP_TOKEN)


def settings_for(stub: SlackStub, mode: str = "http", retry_max_s: float = 300.0) -> SlackSettings:
    return SlackSettings(
        enabled=True,
        mode=mode,
        channel=CHANNEL,
        api_url=stub.api_url,
        approvers={"owners": (OWNER,)},
        poll_s=0.05,
        retry_max_s=retry_max_s,
    )


@dataclass
class Rig:
    data_dir: Path
    stub: SlackStub
    runtime: Runtime
    service: SlackService
    server: ThreadingHTTPServer

    def close(self) -> None:
        self.service.stop()
        self.server.shutdown()
        self.server.server_close()
        self.runtime.close()

    def tick_until_waiting(self) -> str:
        for _ in range(6):
            report = self.runtime.tick(15.0)
            if report.waiting:
                return report.decision_id
        raise AssertionError("no decision came to wait for approval")

    def pending(self, decision_id: str) -> PendingDecision:
        inbox = Inbox.open(self.data_dir)
        try:
            found = inbox.get(decision_id)
        finally:
            inbox.close()
        assert found is not None
        return found

    def approval_message(self, decision_id: str) -> str:
        """The ts of the message the decision was posted as (waits for the sender)."""
        call = self.stub.wait_for(
            lambda: next(
                (
                    c
                    for c in self.stub.of("chat.postMessage")
                    if decision_id in c.params.get("text", "") and c.params.get("blocks")
                ),
                None,
            )
        )
        message = self.stub.wait_for(lambda: self.service.store.message(decision_id))
        assert message.channel == call.params["channel"]
        return str(message.ts)

    def post(self, body: str, headers: dict[str, str]) -> int:
        return post_event(self.server.server_port, body, headers)

    def slash(self, text: str, user: str) -> int:
        body = slash_body(text, user)
        return self.post(body, sign(body))

    def press(self, decision_id: str, user: str, ts: str, *, approve: bool) -> int:
        body = press_body(decision_id, user, ts, approve=approve, pressed_at=f"{time.time():.6f}")
        return self.post(body, sign(body))


def post_event(port: int, body: str, headers: dict[str, str]) -> int:
    """POST a form body to the daemon's /slack/events as Slack does; the HTTP status."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/slack/events",
        data=body.encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def slash_body(text: str, user: str) -> str:
    return urlencode(
        {
            "token": "legacy-verification-token",
            "team_id": "T0TEST",
            "team_domain": "steward-test",
            "channel_id": CHANNEL,
            "channel_name": "gpu-ops",
            "user_id": user,
            "user_name": user.lower(),
            "command": "/steward",
            "text": text,
            "api_app_id": "A0TEST",
            "response_url": "https://hooks.slack.com/commands/T0TEST/1/abc",
            "trigger_id": f"{time.time_ns()}.1.3",  # each request its own, as in Slack
        }
    )


def press_payload(
    decision_id: str, user: str, ts: str, *, approve: bool, pressed_at: str = "1764000000.1"
) -> dict[str, Any]:
    """A block_actions payload as Slack sends it for a press (each press has its own time)."""
    action = "steward_approve" if approve else "steward_deny"
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0TEST"},
        "api_app_id": "A0TEST",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": CHANNEL,
            "is_ephemeral": False,
        },
        "trigger_id": "1.2.4",
        "team": {"id": "T0TEST", "domain": "steward-test"},
        "channel": {"id": CHANNEL, "name": "gpu-ops"},
        "message": {"type": "message", "ts": ts, "text": f"decision {decision_id}"},
        "response_url": "https://hooks.slack.com/actions/T0TEST/1/abc",
        "actions": [
            {
                "action_id": action,
                "block_id": f"steward_answer:{decision_id}",
                "value": decision_id,
                "type": "button",
                "action_ts": pressed_at,
            }
        ],
    }


def press_body(
    decision_id: str, user: str, ts: str, *, approve: bool, pressed_at: str = "1764000000.1"
) -> str:
    payload = press_payload(decision_id, user, ts, approve=approve, pressed_at=pressed_at)
    return urlencode({"payload": json.dumps(payload)})


def open_rig(
    data_dir: Path,
    stub: SlackStub,
    mode: str = "http",
    retry_max_s: float = 300.0,
    scenario: Scenario = SPIKE,
    *,
    policy_path: Path = APPROVE_BURST,
    planner: Planner | None = None,
) -> Rig:
    settings = settings_for(stub, mode, retry_max_s)
    sim = SimCluster.open(data_dir, scenario)
    policy = with_slack_approvers(load_policy(policy_path), settings)
    telemetry = Telemetry()
    runtime = Runtime.open(data_dir, sim, policy, telemetry=telemetry, planner=planner)
    runtime.start()
    server = telemetry.serve(0)
    config = StewardConfig(slack=settings, notifiers=("log", "slack"))
    service = start_for_daemon(config, runtime, telemetry, policy_path=policy_path)
    return Rig(data_dir, stub, runtime, service, server)


@pytest.fixture
def rig(tmp_path: Path, stub: SlackStub, secrets: None) -> Iterator[Rig]:
    opened = open_rig(tmp_path / "steward", stub)
    yield opened
    opened.close()
