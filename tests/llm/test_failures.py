"""When the model or its server misbehaves, the planner gives up in time and says why.

Every case ends in `PlannerFailed` (the loop's cue to let the rules planner decide) within the
decision's deadline, with the reason in `last_report.failure`; nothing the model wrote is used.
"""

from __future__ import annotations

import threading
import time

import pytest

from agent.planners.errors import PlannerFailed
from agent.planners.llm.client import MAX_ATTEMPTS
from agent.planners.llm.tool_calls import MAX_ACTIONS
from agent.signals.model import Signals
from lab.scripted_server import Reply, ScriptedServer, call, error, submit
from tests.llm.conftest import PlannerFactory
from tools.model import ClusterState

SCALE = {"type": "scale_workload", "workload": "burst-llm", "replicas": 1}


def _fails(planner_call: object, busy: tuple[ClusterState, Signals]) -> tuple[str, float]:
    planner = planner_call
    started = time.monotonic()
    with pytest.raises(PlannerFailed) as failed:
        planner.plan(*busy)  # type: ignore[attr-defined]
    elapsed = time.monotonic() - started
    report = planner.last_report  # type: ignore[attr-defined]
    assert report is not None and report.failure == failed.value.reason
    return failed.value.reason, elapsed


def test_a_server_that_never_answers_in_time(
    make: PlannerFactory, busy: tuple[ClusterState, Signals]
) -> None:
    slow = Reply(delay_s=3.0)
    planner = make(slow, slow, slow, slow, timeout_s=0.4, deadline_s=1.2)

    reason, elapsed = _fails(planner, busy)

    assert "timed out" in reason and "1.2 s" in reason
    assert elapsed < 2.0


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_server_that_keeps_failing(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals], status: int
) -> None:
    planner = make(*[error(status)] * 40, deadline_s=1.0)

    reason, elapsed = _fails(planner, busy)

    assert f"HTTP {status}" in reason and 1 < len(server.completions) <= MAX_ATTEMPTS
    assert elapsed < 1.5


def test_a_500_refusing_the_request_is_not_retried(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    """llama-cpp-python answers a request it cannot validate with 500, not 422."""
    planner = make(*[error(500, "1 validation error: messages.2.content")] * 3, deadline_s=5.0)

    reason, elapsed = _fails(planner, busy)

    assert "HTTP 500" in reason and len(server.completions) == 1 and elapsed < 1.0


def test_a_429_is_retried_after_the_time_it_asks(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(error(429, "slow down", retry_after="0"), submit([SCALE]))

    plan = planner.plan(*busy)

    assert len(plan.actions) == 1 and len(server.completions) == 2


def test_a_429_asking_for_more_than_the_deadline_fails_at_once(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(error(429, "quota", retry_after="120"), deadline_s=5.0)

    reason, elapsed = _fails(planner, busy)

    assert "HTTP 429" in reason and len(server.completions) == 1 and elapsed < 1.0


def test_a_body_that_is_not_json(make: PlannerFactory, busy: tuple[ClusterState, Signals]) -> None:
    planner = make(Reply(raw=b"<html>502 Bad Gateway</html>"), deadline_s=2.0)

    reason, _ = _fails(planner, busy)

    assert reason


def test_an_unreachable_endpoint(busy: tuple[ClusterState, Signals]) -> None:
    from agent.planners.llm.planner import LLMPlanner
    from agent.planners.llm.settings import LLMSettings

    planner = LLMPlanner(
        LLMSettings(base_url="http://127.0.0.1:9/v1", model="m", deadline_s=1.0),
        sleep=lambda s: time.sleep(min(s, 0.05)),
    )

    reason, elapsed = _fails(planner, busy)

    assert "could not connect" in reason and elapsed < 1.5


INVALID = {
    "malformed JSON": call("submit_plan", '{"actions": [{"type": "scale_workload",'),
    "a hallucinated tool": call("kubectl_delete_namespace", {"name": "prod"}),
    "a wrong type": submit([{**SCALE, "replicas": "2"}]),
    "an extra field": call("submit_plan", {"actions": [SCALE], "rationale": "x", "run": True}),
    "an extra field in an action": submit([{**SCALE, "force": True}]),
    "an unknown action type": submit([{"type": "delete_workload", "workload": "tts"}]),
    "an absurd value": submit([{**SCALE, "replicas": 3 * 10**15}]),
    "a negative value": submit([{**SCALE, "replicas": -1}]),
    "a workload that does not exist": submit([{**SCALE, "workload": "crypto-miner"}]),
    "a node that does not exist": submit([{"type": "drain_node", "node": "node-9999"}]),
    "a mode that does not exist": submit([{"type": "rotate_mode", "target_mode": "turbo"}]),
    "too many actions": submit([SCALE] * (MAX_ACTIONS + 1)),
    "no tool call": Reply(content="I would scale burst-llm."),
    "too many calls at once": Reply(tool_calls=(("get_policy", "{}"),) * 5),
}


@pytest.mark.parametrize("answer", list(INVALID.values()), ids=list(INVALID))
def test_an_invalid_answer_gets_one_repair_round(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals], answer: Reply
) -> None:
    planner = make(answer, answer, max_steps=4)
    planner.endpoint.required_honoured = False  # "no tool call" is then an error, not a quirk

    reason, _ = _fails(planner, busy)

    assert reason.startswith("invalid answer after one repair round")
    assert len(server.completions) == 2
    assert planner.last_report is not None and planner.last_report.repairs == 1
    repair = server.completions[1]["messages"]
    assert "REJECTED, nothing was done" in repair[-1]["content"]
    assert all(isinstance(m["content"], str) for m in repair)  # llama.cpp refuses null content


def test_a_repaired_answer_is_used(
    make: PlannerFactory, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(INVALID["a wrong type"], submit([SCALE], "fixed"))

    plan = planner.plan(*busy)

    assert plan.rationale == "fixed" and planner.last_report is not None
    assert planner.last_report.repairs == 1


def test_a_model_that_only_looks_never_plans(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    look = call("get_history", {"limit": 3})
    planner = make(look, look, look, max_steps=3)

    reason, _ = _fails(planner, busy)

    assert "no valid plan within 3 model turns" in reason
    assert len(server.completions) == 3


def test_one_decision_at_a_time(make: PlannerFactory, busy: tuple[ClusterState, Signals]) -> None:
    planner = make(
        Reply(delay_s=0.6, tool_calls=(("submit_plan", '{"actions":[],"rationale":"a"}'),))
    )
    first = threading.Thread(target=planner.plan, args=busy)
    first.start()
    time.sleep(0.2)

    with pytest.raises(PlannerFailed, match="in flight"):
        planner.plan(*busy)
    first.join()
