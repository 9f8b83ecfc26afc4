"""`steward eval --planner llm` scores judgment: the deliberations of the cases (an anomaly here)
and the questions whose answers are in the decision log, per model — pass rate, unsafe, latency,
tokens. The model is a stub speaking the OpenAI chat-completions protocol over HTTP: it leaves
anomalies alone and answers questions by searching the log."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lab.scripted_server import Reply, ScriptedServer, call, submit

ROOT = Path(__file__).resolve().parents[2]


def careful(body: dict[str, Any]) -> Reply:
    """Deliberations: nothing to do. Questions: search the log for the workload asked about
    and cite the decision that scaled it to zero or down."""
    tools = {t["function"]["name"] for t in body.get("tools", [])}
    if "answer" not in tools:
        return submit([], "an accounting anomaly: nothing a scale action fixes")
    said = "\n".join(str(m.get("content")) for m in body["messages"])
    asked = re.search(r'"question":"([^"]*)"', said)
    assert asked is not None
    workload = re.search(r"\b(burst-llm|render|tts)\b", asked.group(1))
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return call("search_audit", {"text": workload.group(1) if workload else ""})
    entries = re.findall(
        r'\{"decision_id":"(d-[0-9a-f]{12})"[^{}]*?"actions":\[([^\]]*)\]', results[-1]
    )
    cited = [d for d, actions in entries if " to 0 replica" in actions][:1]
    return call("answer", {"text": f"scaled down in {', '.join(cited)}", "decision_ids": cited})


@pytest.mark.slow
def test_the_scorecard_counts_deliberations_and_questions(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    case = ROOT / "lab" / "cases" / "sharing-mps-double-count.yaml"
    (cases / case.name).write_text(case.read_text())
    with ScriptedServer(responder=careful) as server:
        env = {**os.environ, "STEWARD_LLM_BASE_URL": server.base_url,
               "STEWARD_LLM_MODEL": "scripted-model"}  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "agent.cli", "eval", "--planner", "llm", "--cases", str(cases),
             "--json"],
            capture_output=True, text=True, timeout=900, check=False, env=env,
        )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    card = json.loads(done.stdout)
    assert card["unsafe_actions"] == 0
    assert card["deliberations"]["asked"] >= 1
    assert card["deliberations"].get("planned", 0) >= 1
    assert card["llm"]["models"] == ["scripted-model"] and card["llm"]["prompt_tokens"] > 0
    questions = card["questions"]
    assert questions["questions"] == 2 and questions["unsafe"] == 0
    assert questions["passed"] == 2, questions["results"]
    assert questions["models"] == ["scripted-model"]
    assert questions["prompt_tokens"] > 0 and questions["latency_s_max"] > 0
