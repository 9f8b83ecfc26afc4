"""An answer to `steward ask` that would change something is a proposal: the guard judges it,
it waits in the approval queue under its decision id, and nothing runs until someone approves
it with `steward approve`; a denied one says why and never waits.

The model is a stub that speaks the OpenAI chat-completions protocol over HTTP
(lab/scripted_server.py) and answers with a proposal; the CLI, the agent's graph, the guard,
the decision log and the approval inbox are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent.approvals.asked import ASKED_DIR
from agent.approvals.inbox import Inbox
from agent.audit import AuditLog, Intent, Outcome
from agent.cli.app import app
from agent.support import lockfile
from agent.support.datadir import take_lock
from lab.scripted_server import Reply, ScriptedServer, call

OWNER = "homelab-owner"
"""The member of the default policy's approver group `owners`."""


def _proposing(proposed: list[dict[str, Any]]) -> Callable[[dict[str, Any]], Reply]:
    """A model that answers with the last action the test put in `proposed`."""

    def responder(body: dict[str, Any]) -> Reply:
        text = "I can do that; it needs your approval."
        return call("answer", {"text": text, "proposal": [proposed[-1]]})

    return responder


@pytest.fixture
def day(tmp_path: Path) -> Path:
    """A data dir after a few ticks of the built-in cluster."""
    ran = CliRunner().invoke(
        app, ["run", "--ticks", "4", "--speed", "0", "--data-dir", str(tmp_path)]
    )
    assert ran.exit_code == 0, ran.output
    return tmp_path


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Where the test puts the action the stub proposes."""
    proposed: list[dict[str, Any]] = []
    with ScriptedServer(responder=_proposing(proposed)) as server:
        monkeypatch.setenv("STEWARD_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("STEWARD_LLM_MODEL", "scripted-model")
        yield proposed


def _ask(data_dir: Path, question: str, *, json_out: bool = True) -> Any:
    args = ["ask", question, "--data-dir", str(data_dir)] + (["--json"] if json_out else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if json_out else result.stdout


def _cordoned(data_dir: Path, node: str) -> bool:
    result = CliRunner().invoke(app, ["status", "--json", "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    found = [n for n in json.loads(result.stdout)["nodes"] if n["name"] == node]
    return bool(found[0]["cordoned"])


def test_a_proposal_waits_for_approval_and_runs_only_once_approved(
    day: Path, model: list[dict[str, Any]]
) -> None:
    model.append({"type": "cordon_node", "node": "render-1",
                  "reason": "the operator asked to keep new work off render-1"})  # fmt: skip
    asked = _ask(day, "please keep new work off render-1")
    proposal = asked["proposal"]
    approval_id = proposal["approval_id"]
    assert proposal["status"] == "waiting", proposal
    [shown] = proposal["actions"]
    assert shown["verdict"] == "needs_approval" and shown["approvers"] == ["owners"]
    assert proposal["approve_with"] == f"steward approve {approval_id} --as {OWNER}"

    inbox = Inbox.open(day)
    try:
        pending = inbox.get(approval_id)
    finally:
        inbox.close()
    assert pending is not None and pending.status == "waiting"
    assert [a.describe() for a in pending.actions] == ["cordon render-1"]
    log = AuditLog.open(day, readonly=True)
    try:
        intent = next(r.payload for r in log.decision(approval_id) if isinstance(r.payload, Intent))
    finally:
        log.close()
    assert intent.planner == "llm" and "please keep new work off render-1" in intent.rationale
    assert not _cordoned(day, "render-1")  # nothing ran

    # The text form says the same, with the command that approves it.
    model.append(model[-1])
    text = _ask(day, "please keep new work off render-1", json_out=False)
    assert "waits in the approval queue" in text and "steward approve d-" in text

    approved = CliRunner().invoke(
        app, ["approve", approval_id, "--as", OWNER, "--data-dir", str(day)]
    )
    assert approved.exit_code == 0, approved.output
    ran = CliRunner().invoke(app, ["run", "--ticks", "1", "--speed", "0", "--data-dir", str(day)])
    assert ran.exit_code == 0, ran.output
    log = AuditLog.open(day, readonly=True)
    try:
        outcome = next(
            r.payload for r in log.decision(approval_id) if isinstance(r.payload, Outcome)
        )
    finally:
        log.close()
    assert outcome.results[0].executed and outcome.results[0].ok
    assert _cordoned(day, "render-1")


def test_a_denied_proposal_says_why_and_never_waits(day: Path, model: list[dict[str, Any]]) -> None:
    model.append({"type": "scale_workload", "workload": "tts", "replicas": 0,
                  "reason": "the operator asked to stop tts"})  # fmt: skip
    asked = _ask(day, "stop tts for tonight")
    proposal = asked["proposal"]
    assert proposal["status"] == "denied" and "approve_with" not in proposal
    [shown] = proposal["actions"]
    assert shown["verdict"] == "deny" and "protected" in shown["message"]
    inbox = Inbox.open(day)
    try:
        assert inbox.get(proposal["approval_id"]) is None
    finally:
        inbox.close()
    text = _ask(day, "stop tts for tonight", json_out=False)
    assert "the guard denied it" in text and "protected" in text


def test_with_an_agent_running_the_proposal_is_handed_to_it(
    day: Path, model: list[dict[str, Any]]
) -> None:
    model.append({"type": "cordon_node", "node": "render-1",
                  "reason": "the operator asked to keep render-1 free"})  # fmt: skip
    lock = take_lock(day)  # what a running `steward run` holds
    try:
        asked = _ask(day, "keep render-1 free tonight")
    finally:
        lockfile.release(lock)
    proposal = asked["proposal"]
    assert proposal["status"] == "handed_to_agent"
    assert (day / ASKED_DIR / f"{proposal['approval_id']}.json").is_file()
    # The agent's next tick takes it: judged, recorded, waiting in the approval queue.
    ran = CliRunner().invoke(app, ["run", "--ticks", "1", "--speed", "0", "--data-dir", str(day)])
    assert ran.exit_code == 0, ran.output
    inbox = Inbox.open(day)
    try:
        pending = inbox.get(proposal["approval_id"])
    finally:
        inbox.close()
    assert pending is not None and pending.status == "waiting"
    assert not list((day / ASKED_DIR).glob("*.json"))
