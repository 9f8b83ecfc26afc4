"""A question in Slack whose answer would change something: the proposal goes through the guard
and the approval queue like any decision, posted with the Approve / Deny buttons every approval
gets; nothing runs until an approver presses Approve; a denied one says why.

Requests are signed with the signing secret and sent to the daemon's /slack/events (HTTP mode);
the Web API is the Slack stub; the model is a stub speaking the OpenAI chat-completions protocol
over HTTP (lab/scripted_server.py). The daemon's loop, guard, log and inbox are the real ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.audit import Outcome
from agent.chatops.access import with_slack_approvers
from agent.chatops.service import start_for_daemon
from agent.daemon.config import StewardConfig
from agent.daemon.runtime import Runtime
from agent.support.telemetry import Telemetry
from lab.scripted_server import Reply, ScriptedServer, call
from lab.sim.backend import SimCluster
from policies.loader import load_policy
from tests.chatops.conftest import APPROVE_BURST, OUTSIDER, OWNER, SPIKE, Rig, settings_for
from tests.chatops.slack_stub import SlackStub
from tests.chatops.test_commands import answer


def proposing(body: dict[str, Any]) -> Reply:
    """Proposes what the question asks for: stopping tts (protected), or a render replica."""
    question = str(body["messages"][1]["content"])
    if "tts" in question.rsplit("untrusted", maxsplit=1)[-1]:
        action = {"type": "scale_workload", "workload": "tts", "replicas": 0, "reason": "asked"}
    else:
        action = {"type": "scale_workload", "workload": "render", "replicas": 1, "reason": "asked"}
    return call("answer", {"text": "that is a change: it is proposed", "proposal": [action]})


@pytest.fixture
def asked_rig(tmp_path: Path, stub: SlackStub, secrets: None) -> Iterator[Rig]:
    with ScriptedServer(responder=proposing) as model:
        data_dir = tmp_path / "steward"
        settings = settings_for(stub, "http")
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
            yield rig
        finally:
            rig.close()


def _render(rig: Rig) -> int:
    render = rig.runtime.ctx.cluster.observe().workload("render")
    assert render is not None
    return render.desired_replicas


def test_a_proposal_from_slack_waits_for_the_buttons(asked_rig: Rig) -> None:
    rig = asked_rig
    rig.runtime.tick(15.0)
    assert _render(rig) == 0
    assert rig.slash("ask keep a render replica warm tonight", OUTSIDER) == 200
    reply = answer(rig, "answer to: keep a render replica warm tonight")
    said = str(reply.params)
    found = re.search(r"proposed as decision (d-[0-9a-f]{12})", said)
    assert found, said
    decision = found.group(1)
    assert "[needs approval] scale render to 1 replica(s)" in said

    rig.runtime.tick(15.0)  # the agent takes the proposal: judged, logged, waiting
    assert rig.pending(decision).status == "waiting"
    ts = rig.approval_message(decision)
    posted = next(
        c
        for c in rig.stub.of("chat.postMessage")
        if decision in c.params.get("text", "") and c.params.get("blocks")
    )
    buttons = posted.params["blocks"][-1]["elements"]
    assert [b["action_id"] for b in buttons] == ["steward_approve", "steward_deny"]
    rig.runtime.tick(15.0)
    assert _render(rig) == 0, "nothing runs before an approval"

    assert rig.press(decision, OWNER, ts, approve=True) == 200
    rig.stub.wait_for(lambda: rig.pending(decision).status == "approved")
    report = rig.runtime.tick(15.0)
    assert decision in report.resumed
    outcome = next(
        r.payload
        for r in rig.runtime.ctx.audit.decision(decision)
        if isinstance(r.payload, Outcome)
    )
    assert outcome.results[0].executed and outcome.results[0].ok
    assert _render(rig) == 1


def test_a_denied_proposal_from_slack_says_why(asked_rig: Rig) -> None:
    rig = asked_rig
    assert rig.slash("ask stop tts for the night", OUTSIDER) == 200
    reply = answer(rig, "answer to: stop tts for the night")
    said = str(reply.params)
    assert "[denied] scale tts to 0 replica(s)" in said and "the guard denies it" in said
    decision = re.search(r"proposed as decision (d-[0-9a-f]{12})", said)
    assert decision
    rig.runtime.tick(15.0)
    outcome = next(
        r.payload
        for r in rig.runtime.ctx.audit.decision(decision.group(1))
        if isinstance(r.payload, Outcome)
    )
    assert not outcome.results[0].executed
    tts = rig.runtime.ctx.cluster.observe().workload("tts")
    assert tts is not None and tts.desired_replicas >= 1
