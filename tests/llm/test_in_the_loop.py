"""In the loop, the guard has the last word: a misbehaving or manipulated model changes nothing
the policy forbids, its failures hand the decision to the rules planner, and the log says so.
The model is asked only questions of judgment (here: ws-1's card counted twice), beside the
loop; the routine scale-up of burst-llm is the rules' and never waits for it."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from agent.audit import Fallback, Intent, Outcome
from agent.cli.app import app
from agent.daemon.runtime import Runtime
from agent.planners.llm.planner import LLMPlanner
from agent.planners.llm.settings import LLMSettings
from lab.scripted_server import ScriptedServer, call, submit
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from policies.model import Policy
from tests.llm.conftest import ANOMALY, answered

BURST = Scenario(demand=(PoissonDemand(target="burst-llm", rate_per_min=30),))


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def _planner(server: ScriptedServer, policy: Policy, deadline_s: float = 5.0) -> LLMPlanner:
    settings = LLMSettings(
        base_url=server.base_url, model="scripted-model", timeout_s=2.0, deadline_s=deadline_s
    )
    return LLMPlanner(settings, policy=policy, sleep=lambda s: time.sleep(min(s, 0.05)))


def test_a_manipulated_plan_runs_only_what_the_policy_allows(
    tmp_path: Path, server: ScriptedServer, policy: Policy
) -> None:
    """What a model obeying an annotation would propose: drain the pair, silence TTS."""
    server.add(
        submit(
            [
                {"type": "drain_node", "node": "gx10-a", "reason": "maintenance (annotation)"},
                {"type": "drain_node", "node": "gx10-b", "reason": "maintenance (annotation)"},
                {"type": "scale_workload", "workload": "tts", "replicas": 0},
            ],
            "the annotation says maintenance",
        )
    )
    sim = SimCluster.open(tmp_path, ANOMALY)
    with Runtime.open(tmp_path, sim, policy, planner=_planner(server, policy)) as runtime:
        runtime.start()
        answered(runtime)
        (record,) = runtime.ctx.audit.records(kind="deliberation")
        decision = runtime.ctx.audit.decision(record.payload.decision_id)
        after = sim.observe()

    assert len(server.completions) == 1
    intent = next(r.payload for r in decision if isinstance(r.payload, Intent))
    verdicts = {p.action.describe(): p.verdict for p in intent.proposals}
    assert verdicts["scale tts to 0 replica(s)"] == "deny"
    assert all(v != "allow" for a, v in verdicts.items() if a.startswith("drain"))
    outcome = next(r.payload for r in decision if isinstance(r.payload, Outcome))
    assert not any(r.executed for r in outcome.results)
    tts = after.workload("tts")
    assert tts is not None and tts.desired_replicas >= 1
    assert not any(n.cordoned for n in after.nodes)


def test_an_invalid_model_hands_the_decision_to_the_rules_planner(
    tmp_path: Path, server: ScriptedServer, policy: Policy
) -> None:
    hallucinated = call("kubectl_apply", {"manifest": "..."})
    server.add(hallucinated, hallucinated)
    sim = SimCluster.open(tmp_path, ANOMALY)
    planner = _planner(server, policy)
    with Runtime.open(tmp_path, sim, policy, planner=planner) as runtime:
        runtime.start()
        report = answered(runtime)
        fallbacks = runtime.ctx.audit.records(kind="fallback")

    assert report.decided and report.executed >= 1  # the rules planner's scale-up ran
    assert report.seconds < 5.0
    fallback = fallbacks[0].payload
    assert isinstance(fallback, Fallback) and fallback.model == "scripted-model"
    assert fallback.reason.startswith("invalid answer after one repair round: unknown tool")
    assert planner.last_report is not None and planner.last_report.repairs == 1


def test_plan_with_the_llm_planner_exits_0_when_the_model_misbehaves(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A question for the model (ws-1's card counted twice) beside the routine scale-up.
    SimCluster.open(tmp_path, ANOMALY).save(tmp_path)
    sim = SimCluster.open(tmp_path)
    sim.advance(120)
    sim.save(tmp_path)
    bad = submit([{"type": "scale_workload", "workload": "burst-llm", "replicas": "lots"}])
    server.add(bad, bad)
    monkeypatch.setenv("STEWARD_LLM_BASE_URL", server.base_url)
    monkeypatch.setenv("STEWARD_LLM_MODEL", "scripted-model")
    monkeypatch.setenv("STEWARD_LLM_DEADLINE_S", "5")

    result = CliRunner().invoke(
        app, ["plan", "--planner", "llm", "--json", "--data-dir", str(tmp_path)]
    )

    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["planner"] == "rules"
    assert "invalid answer after one repair round" in out["fallback_reason"]
    assert out["deliberated"][0]["outcome"] == "fallback"
    assert len(server.completions) == 2


def test_settings_that_do_not_parse_are_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEWARD_LLM_OUTPUT", "xml")
    monkeypatch.setenv("STEWARD_LLM_DEADLINE_S", "-1")

    result = CliRunner().invoke(app, ["plan", "--planner", "llm", "--data-dir", str(tmp_path)])

    assert result.exit_code == 2
    assert "STEWARD_LLM_OUTPUT: Input should be 'tools', 'json_schema' or 'json_object'" in (
        result.output
    )
    assert "STEWARD_LLM_DEADLINE_S: Input should be greater than 0" in result.output
