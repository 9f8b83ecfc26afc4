"""Against a real OpenAI-compatible server with a real model: llama-cpp-python's server and
Gemma 3 270M, started on loopback by `scripts/llm-server` (installed by .ci/run beforehand).

A 270M base model has no judgement, so these tests assert protocol and safety, not wisdom: the
tool call comes back through the real server and parses, the server's quirks (prose answered to
tool_choice="required", HTTP 500 for json_schema) are learnt, an answer cut short is repaired
once and then handed to the rules planner, and whatever the model proposes names only what
exists. The prompt is also counted with the model's own tokenizer (/extras/tokenize).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.audit import DeliberationRecord
from agent.daemon.runtime import Runtime
from agent.planners.errors import PlannerFailed
from agent.planners.llm.planner import LLMPlanner, first_request
from agent.planners.llm.settings import LLMSettings, OutputMode
from agent.signals.model import Signals
from lab.bench.llm_prompt import BUDGET_TOKENS, FLEET_POLICY, fleet_observation, fleet_signals
from lab.sim.backend import SimCluster
from policies.loader import load_policy
from policies.model import Policy
from tests.llm.conftest import ANOMALY, answered
from tools.model import ClusterState

# A few tokens a second when the 2 cores are shared: minutes per test at worst, ~1 min in all
# on a quiet machine. The deadline stays below pytest's timeout so a slow run fails as itself.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "llm-server"
READY_S = 180.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
    return body


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    venv = Path(os.environ.get("STEWARD_LLM_VENV", ROOT / ".venv-llm"))
    if not (venv / "bin" / "python").exists():
        pytest.fail(f"no {venv}: run `scripts/llm-server install` first (.ci/run does)")
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llm") / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(SCRIPT), "serve", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_S
        while True:
            try:
                _get(f"{base}/v1/models")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log_path.read_text(errors="replace")[-3000:]
                    pytest.fail(f"the llama.cpp server did not start on {base}:\n{tail}")
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _planner(
    base: str, policy: Policy, output: OutputMode = "tools", max_tokens: int = 96
) -> LLMPlanner:
    # Generous limits: a 2-core machine shared with other work decodes a few tokens a second.
    # The request timeout is the whole deadline: llama-cpp-python finishes a request the client
    # gave up on before it takes the next, so an early timeout only queues the retry behind it.
    settings = LLMSettings(
        base_url=f"{base}/v1",
        output=output,
        timeout_s=600,
        deadline_s=600,
        max_steps=2,
        max_tokens=max_tokens,
    )
    return LLMPlanner(settings, policy=policy)


def _safe(planner: LLMPlanner, state: ClusterState, signals: Signals) -> str:
    """Plan; a plan names only what exists (check_plan passed), a failure says why."""
    try:
        plan = planner.plan(state, signals)
    except PlannerFailed as failed:
        assert planner.last_report is not None
        assert planner.last_report.failure == failed.reason
        return f"fallback: {failed.reason}"
    for action in plan.actions:
        for name in (getattr(action, "workload", None), getattr(action, "node", None)):
            assert name is None or state.workload(name) or state.node(name)
    return f"plan: {[a.describe() for a in plan.actions]}"


def test_tool_calling_through_the_real_server(
    real_server: str, policy: Policy, busy: tuple[ClusterState, Signals]
) -> None:
    planner = _planner(real_server, policy)

    outcome = _safe(planner, *busy)

    print(f"\ntools mode: {outcome}; {planner.last_report}")
    report = planner.last_report
    assert report is not None and report.model and report.model.endswith(".gguf")
    assert report.prompt_tokens > 500 and report.completion_tokens > 0
    assert not planner.endpoint.required_honoured, "llama-cpp-python ignores required"
    assert report.output_mode == "tools"
    assert "deadline" not in outcome and "HTTP" not in outcome, outcome


def test_json_schema_is_refused_and_json_object_answers(
    real_server: str, policy: Policy, busy: tuple[ClusterState, Signals]
) -> None:
    planner = _planner(real_server, policy, output="json_schema")

    outcome = _safe(planner, *busy)

    print(f"\njson_object mode: {outcome}; {planner.last_report}")
    assert planner.endpoint.mode == "json_object"
    assert "HTTP" not in outcome and "deadline" not in outcome, outcome


def test_a_deliberation_through_the_real_server_is_judged_and_the_scale_up_never_waits(
    real_server: str, policy: Policy, tmp_path: Path
) -> None:
    """A short answer budget: the model's answer is a plan (judged on a fresh observation) or,
    cut short, repaired once and then a fallback to the rules; either way the log says which,
    and burst-llm's scale-up ran in its own tick without waiting for the model."""
    planner = _planner(real_server, policy, max_tokens=16)
    planner.endpoint.required_honoured = False  # learnt above; saves a prose turn
    sim = SimCluster.open(tmp_path, ANOMALY)  # the card counted twice: a question for the model
    sim.advance(105)
    with Runtime.open(tmp_path, sim, policy, planner=planner) as runtime:
        runtime.start()
        report = answered(runtime)  # the scale-up in its tick; the model's answer judged next
        fallbacks = runtime.ctx.audit.records(kind="fallback")
        (found,) = runtime.ctx.audit.records(kind="deliberation")

    record = found.payload
    assert isinstance(record, DeliberationRecord) and record.question == "anomaly"
    assert report.decided and report.executed >= 1 and report.seconds < 5.0
    last = planner.last_report
    assert last is not None and last.requests >= 2  # /v1/models, then the answer(s)
    assert record.model == last.model and record.prompt_tokens == last.prompt_tokens
    if record.outcome == "fallback":
        assert last.failure and fallbacks
    else:
        assert record.outcome == "planned" and last.failure is None and not fallbacks
    print(f"\nreal deliberation: {record.outcome}, {last}")


def test_the_prompt_at_1000_nodes_in_the_models_own_tokens(real_server: str) -> None:
    fleet_policy = load_policy(FLEET_POLICY)
    state = fleet_observation(1000, 8)
    request = first_request(state, fleet_signals(state, fleet_policy), fleet_policy)
    text = "\n".join(m["content"] for m in request["messages"]) + json.dumps(request["tools"])
    body = json.dumps({"input": text}).encode()
    asked = urllib.request.Request(
        f"{real_server}/extras/tokenize/count",
        data=body,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(asked, timeout=60) as response:
        count = json.loads(response.read())["count"]

    print(f"\nprompt at 1000 nodes: {count} Gemma tokens, {len(text)} characters")
    assert count <= BUDGET_TOKENS
