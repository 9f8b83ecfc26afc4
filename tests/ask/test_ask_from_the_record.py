"""`steward ask` answers from the decision log with read-only tools only, citing decision ids.

The model is a stub that speaks the OpenAI chat-completions protocol over HTTP
(lab/scripted_server.py): it searches the log through the tool it is offered, then answers
with the id it found. The real parts are the openai client, the tools, the log and the CLI.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent.audit import AuditLog, Intent, Outcome
from agent.cli.app import app
from agent.planners.llm.tool_calls import LOOKUPS
from lab.scripted_server import Reply, ScriptedServer, call
from tools.actions import action_schemas

STEWARD = [sys.executable, "-m", "agent.cli"]


def reader(body: dict[str, Any]) -> Reply:
    """Searches the log for render's scale to zero, then answers with the newest id found."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return call("search_audit", {"text": "scale render to 0", "limit": 5})
    found = re.findall(r'"decision_id":"(d-[0-9a-f]{12})"', results[-1])
    text = f"render was idle past its pool's idle time and was scaled to zero in {found[0]}."
    return call("answer", {"text": text, "decision_ids": found[:1]})


def _scaled_render_to_zero(data_dir: Path) -> str:
    """The decision that last scaled render to zero and ran, from the log itself."""
    log = AuditLog.open(data_dir, readonly=True)
    try:
        ran = {
            r.payload.decision_id
            for r in log.records(kind="outcome")
            if isinstance(r.payload, Outcome)
            and any(x.executed and x.ok for x in r.payload.results)
        }
        ids = [
            r.payload.decision_id
            for r in log.records(kind="intent")
            if isinstance(r.payload, Intent)
            and r.payload.decision_id in ran
            and any(
                p.action.describe() == "scale render to 0 replica(s)" for p in r.payload.proposals
            )
        ]
    finally:
        log.close()
    assert ids, "the built-in day scales render to zero"
    return ids[-1]


@pytest.mark.slow
def test_why_is_render_at_zero_cites_the_scale_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    day = subprocess.run(
        [*STEWARD, "run", "--speed", "0", "--data-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert day.returncode == 0, day.stderr
    expected = _scaled_render_to_zero(tmp_path)
    with ScriptedServer(responder=reader) as server:
        monkeypatch.setenv("STEWARD_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("STEWARD_LLM_MODEL", "scripted-model")
        result = CliRunner().invoke(
            app, ["ask", "why is render at zero?", "--json", "--data-dir", str(tmp_path)]
        )
        requests = server.completions

    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["decision_ids"] == [expected]
    assert answer["cited_found_in_log"] == {expected: True}
    assert expected in answer["answer"] and answer["tools_called"] == ["search_audit"]
    # The tools offered to ask: the read-only ones and `answer`; no action tool, no submit_plan.
    offered = {t["function"]["name"] for r in requests for t in r["tools"]}
    assert offered <= {*LOOKUPS, "answer"}
    assert not offered & {"submit_plan", *action_schemas()}


def test_without_a_model_ask_says_so_and_points_to_status_and_explain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("STEWARD_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(app, ["ask", "why is render at zero?", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "none is configured" in result.output
    assert "steward status" in result.output and "steward audit explain" in result.output
