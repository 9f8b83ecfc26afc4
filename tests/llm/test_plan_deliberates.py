"""`steward plan --planner llm` plans as the daemon does: the rules plan the routine part (the
scale-up burst-llm's requests need), and the question that needs judgment (ws-1's MPS-shared
card counted twice: an anomaly no rule fixes) is deliberated by the model under its deadline;
the plan output shows it as deliberated, with the model's plan or the fallback and why. A dry
run: nothing executes.

The model is a stub speaking the OpenAI chat-completions protocol over HTTP
(lab/scripted_server.py); the CLI runs as a real process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lab.scripted_server import Reply, ScriptedServer, submit
from lab.sim.backend import SimCluster
from tests.llm.conftest import ANOMALY

ROOT = Path(__file__).resolve().parents[2]
CORDON = [{"type": "cordon_node", "node": "ws-1", "reason": "its card is counted twice"}]


def _data_dir(path: Path) -> Path:
    sim = SimCluster.open(path, ANOMALY)
    sim.advance(120)
    sim.save(path)
    return path


def _plan(server: ScriptedServer, data_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "STEWARD_LLM_BASE_URL": server.base_url,
        "STEWARD_LLM_MODEL": "scripted-model",
        "STEWARD_LLM_DEADLINE_S": "5",
    }
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "plan", "--planner", "llm",
         "--data-dir", str(data_dir), *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _asked_anomaly(body: dict[str, Any]) -> bool:
    return any("An anomaly was found" in str(m.get("content")) for m in body["messages"])


def test_plan_deliberates_the_question_and_the_rules_plan_the_rest(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Reply:
        asked.append(body)
        return submit(CORDON, "ws-1 refuses every pod while its card counts twice")

    data_dir = _data_dir(tmp_path)
    with ScriptedServer(responder=model) as server:
        done = _plan(server, data_dir, "--json")
        text = _plan(server, data_dir)

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert asked and all(_asked_anomaly(b) for b in asked), "the model is asked the question only"
    [question] = out["deliberated"]
    assert question["question"] == "anomaly" and question["outcome"] == "planned"
    assert question["premise"].startswith("anomaly:ws-1")
    assert question["actions"] == ["cordon ws-1"] and question["model"] == "scripted-model"
    assert "counts twice" in question["reason"]
    described = [a["describe"] for a in out["actions"]]
    assert "cordon ws-1" in described
    assert any(d.startswith("scale burst-llm to") for d in described), "the routine scale-up"
    assert out["planner"] == "llm" and out["fallback_reason"] is None
    # A dry run: nothing ran, the simulated cluster is as it was.
    ws1 = next(n for n in SimCluster.open(data_dir).observe().nodes if n.name == "ws-1")
    assert not ws1.cordoned

    assert text.returncode == 0, text.stderr
    said = " ".join(text.stdout.split())
    assert "deliberated anomaly (anomaly:ws-1" in said and "scripted-model decided in" in said


def test_a_model_that_misses_its_deadline_is_a_fallback_with_the_reason(tmp_path: Path) -> None:
    with ScriptedServer([Reply(delay_s=12.0)]) as server:
        done = _plan(server, _data_dir(tmp_path), "--json")

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    [question] = out["deliberated"]
    assert question["outcome"] == "fallback" and question["actions"] == []
    assert question["latency_s"] <= 10, "ended at its deadline of 5 s"
    assert out["planner"] == "rules" and out["fallback_reason"]
    assert any(a["describe"].startswith("scale burst-llm to") for a in out["actions"])
