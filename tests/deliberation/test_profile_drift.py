"""A capacity profile that drifted (a workload's replicas serving beyond +-25 % of the catalogue
profile, which the online correction does not follow) is a finding no rule fixes: a question for
the model while the drift lasts, answered by the rules (no action, and the log says so) when no
model deliberates or the model fails.

The simulator serves exactly its catalogue profile, so the drift is put in the signals that
assess hands the planners; the model is a stub speaking the OpenAI chat-completions protocol over
HTTP (lab/scripted_server.py), asked through the real LLM planner.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import structlog
from langgraph.graph import END
from structlog.testing import capture_logs

from agent.loop.context import LoopContext
from agent.loop.deliberation import deliberate_now
from agent.loop.graph import after_assess
from agent.loop.nodes import _said_rules_decide
from agent.loop.questions import split
from agent.loop.state import Decision
from agent.signals.model import Signals, SloView, WorkloadSignals
from lab.scripted_server import Reply, ScriptedServer, bad, submit
from lab.sim.backend import SimCluster
from policies.loader import load_default_policy
from tests.deliberation.conftest import planner
from tools.actions import Plan
from tools.model import ClusterState

DRIFT = (
    "burst-llm: replicas serve 31 tok/s each at 24 streams where the profile predicts 52 (60%); "
    "the correction stays within +-25 %: re-profile the model"
)


def _signals(state: ClusterState, *, told: bool) -> Signals:
    """burst-llm drifting: said on the tick it is first seen (`told`), going on after."""
    view = SloView(need=1, sized=1, drift=DRIFT if told else "", drifting=True)
    burst = WorkloadSignals(
        workload="burst-llm",
        pool="burst",
        kind="inference",
        desired_replicas=1,
        ready_replicas=1,
        slo=view,
    )
    return Signals(
        observed_at=state.observed_at,
        workloads=(burst,),
        findings=(DRIFT,) if told else (),
    )


def _state(tmp_path: Path) -> ClusterState:
    return SimCluster.open(tmp_path).observe()


def test_a_drift_is_a_question_while_it_lasts(tmp_path: Path) -> None:
    state = _state(tmp_path)
    policy = load_default_policy()
    first = split(Plan(), state, _signals(state, told=True), policy).questions
    later = split(Plan(), state, _signals(state, told=False), policy).questions
    [asked] = first
    assert asked.kind == "anomaly" and asked.key == "anomaly:profile-drift:burst-llm"
    assert asked.facts["finding"] == DRIFT and asked.rules_actions == ()
    # The premise stands from tick to tick (a later answer is judged, not superseded).
    assert [q.key for q in later] == [asked.key]
    # With a model, a drift alone is worth planning for; without one the tick ends at assess
    # once the drift has been told.
    quiet = Decision(decision_id="d-000000000001", signals=_signals(state, told=False))
    assert after_assess(quiet.model_copy(update={"deliberating": True})) == "plan"
    assert after_assess(quiet) == END


def test_the_model_deliberates_a_drift_and_a_failure_falls_back_to_the_rules(
    tmp_path: Path,
) -> None:
    state = _state(tmp_path)
    signals = _signals(state, told=True)
    [question] = split(Plan(), state, signals, load_default_policy()).questions
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Reply:
        asked.append(body)
        return submit([], "the profile is stale: re-profile burst-llm; nothing to run now")

    with ScriptedServer(responder=model) as server:
        answer = deliberate_now(planner(server), question, state, signals)
    assert answer.plan is not None and answer.fallback_reason is None
    assert answer.model == "scripted-model" and "re-profile" in answer.plan.rationale
    prompt = " ".join(str(m.get("content")) for m in asked[0]["messages"])
    assert "An anomaly was found that no rule fixes" in prompt and "profile predicts 52" in prompt

    with ScriptedServer([bad("null_message"), bad("null_message")]) as server:
        failed = deliberate_now(planner(server, deadline_s=5.0), question, state, signals)
    assert failed.plan is None and failed.fallback_reason
    assert failed.question.rules_actions == (), "the rules' answer to a drift: no action"


def test_without_a_model_the_log_says_the_rules_decided_the_drift(tmp_path: Path) -> None:
    state = _state(tmp_path)
    d = Decision(decision_id="d-000000000002", signals=_signals(state, told=True))
    ctx = cast(LoopContext, SimpleNamespace(policy=load_default_policy()))
    structlog.reset_defaults()  # the info line, which this package's tests otherwise filter
    with capture_logs() as logs:
        plan = _said_rules_decide(Plan(rationale="nothing to scale"), state, d, ctx)
    assert plan.actions == ()
    [said] = [e for e in logs if e["event"] == "question decided by the rules"]
    assert said["question"] == "anomaly (anomaly:profile-drift:burst-llm)"
    assert said["because"] == "no model deliberates" and said["actions"] == []
