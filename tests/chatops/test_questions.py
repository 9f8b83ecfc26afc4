"""Questions in Slack: `/steward ask …` and `@steward <question>` are answered by the model with
the read-only tools, citing the decision ids they rely on; without a model the reply says so.
The model is a stub speaking the OpenAI chat-completions protocol over HTTP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.chatops.access import with_slack_approvers
from agent.chatops.service import start_for_daemon
from agent.daemon.config import StewardConfig
from agent.daemon.runtime import Runtime
from agent.support.telemetry import Telemetry
from lab.scripted_server import Reply, ScriptedServer, call
from lab.sim.backend import SimCluster
from policies.loader import load_policy
from tests.chatops.conftest import APPROVE_BURST, OUTSIDER, SPIKE, Rig, settings_for
from tests.chatops.slack_stub import CHANNEL, SlackStub
from tests.chatops.test_commands import _envelope, answer, command


def newest_decision(body: dict[str, Any]) -> Reply:
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return call("search_audit", {"text": ""})
    found = re.findall(r'"decision_id":"(d-[0-9a-f]{12})"', results[-1])
    return call(
        "answer", {"text": f"the last thing done was {found[0]}", "decision_ids": found[:1]}
    )


@pytest.fixture
def asked_rig(tmp_path: Path, stub: SlackStub, secrets: None) -> Iterator[Rig]:
    with ScriptedServer(responder=newest_decision) as model:
        data_dir = tmp_path / "steward"
        settings = settings_for(stub, "socket")
        policy = with_slack_approvers(load_policy(APPROVE_BURST), settings)
        telemetry = Telemetry()
        runtime = Runtime.open(
            data_dir, SimCluster.open(data_dir, SPIKE), policy, telemetry=telemetry
        )
        runtime.start()
        server = telemetry.serve(0)
        config = StewardConfig.model_validate(
            {
                "slack": settings,
                "notifiers": ("log", "slack"),
                "llm": {"base_url": model.base_url, "model": "scripted-model"},
            }
        )
        service = start_for_daemon(config, runtime, telemetry, policy_path=APPROVE_BURST)
        rig = Rig(data_dir, stub, runtime, service, server)
        try:
            stub.wait_for(stub.connected)
            yield rig
        finally:
            rig.close()


def test_ask_and_a_mention_answer_with_the_decision_id(asked_rig: Rig) -> None:
    rig = asked_rig
    decided = next(r.decision_id for r in (rig.runtime.tick(15.0) for _ in range(6)) if r.decided)
    command(rig, "ask what did you do last?", OUTSIDER)
    reply = answer(rig, "answer to: what did you do last?")
    assert decided in str(reply.params)
    at = "1764000200.000300"
    event = {"type": "app_mention", "user": OUTSIDER, "text": "<@U0BOT> why did you do that?",
             "ts": at, "channel": CHANNEL, "event_ts": at}  # fmt: skip
    _envelope(rig, "events_api", {"token": "t", "team_id": "T0TEST", "api_app_id": "A0TEST",
                                  "event": event, "type": "event_callback",
                                  "event_id": "Ev0ASK", "event_time": 1764000200})  # fmt: skip
    mention = answer(rig, "answer to: why did you do that?")
    assert f"relies on {decided}" in str(mention.params)


def test_without_a_model_ask_says_so(tmp_path: Path, stub: SlackStub, secrets: None) -> None:
    from tests.chatops.conftest import open_rig

    rig = open_rig(tmp_path / "steward", stub, mode="socket")
    try:
        stub.wait_for(stub.connected)
        command(rig, "ask why is render at zero?", OUTSIDER)
        found = rig.stub.wait_for(
            lambda: [c for c in rig.stub.calls if "no model is configured" in str(c.params)]
        )
        assert "/steward why ID" in str(found[-1].params)
    finally:
        rig.close()
