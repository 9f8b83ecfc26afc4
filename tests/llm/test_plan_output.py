"""`steward plan --planner llm`, as a real process: with --json, stdout is the JSON document
alone (logs go to stderr); as text, it says that the LLM failed and the rules decided. The model
is asked only the question of judgment (ws-1's card counted twice): its failure is a fallback
there, while the routine scale-up is the rules' in any case.

Before: the planner's log line came first on stdout, so `plan --json | jq` broke, and the text
output never said the LLM had failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lab.scripted_server import ScriptedServer, bad
from lab.sim.backend import SimCluster
from tests.llm.conftest import ANOMALY

ROOT = Path(__file__).resolve().parents[2]


def _busy_data_dir(path: Path) -> Path:
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
    command = [sys.executable, "-m", "agent.cli", "plan", "--planner", "llm"]
    return subprocess.run(
        [*command, "--data-dir", str(data_dir), *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_plan_json_prints_only_the_json_on_stdout(tmp_path: Path) -> None:
    with ScriptedServer([bad("null_message")]) as server:
        done = _plan(server, _busy_data_dir(tmp_path), "--json")

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["planner"] == "rules" and "choices.0.message" in out["fallback_reason"]
    [asked] = out["deliberated"]
    assert asked["question"] == "anomaly" and asked["outcome"] == "fallback"
    assert '"deliberated (dry run)"' in done.stderr  # the log line went to stderr


def test_plan_text_says_the_llm_failed_and_the_rules_decided(tmp_path: Path) -> None:
    with ScriptedServer([bad("choices_as_string")]) as server:
        done = _plan(server, _busy_data_dir(tmp_path))

    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # the console wraps long lines
    assert "the llm planner failed (" in text and "the rules planner decided" in text
    assert "breaks the OpenAI chat protocol" in text
