"""Servers that only do JSON-constrained output: json_schema, llama.cpp's json_object, and the
downgrade a server's refusal triggers."""

from __future__ import annotations

import json

from agent.planners.llm.prompts import FENCE_OPEN
from agent.signals.model import Signals
from lab.scripted_server import ScriptedServer, envelope, error
from tests.llm.conftest import PlannerFactory
from tools.actions import ScaleWorkload
from tools.model import ClusterState

SCALE_BURST = {"type": "scale_workload", "workload": "burst-llm", "replicas": 1}


def test_json_object_with_a_schema_carries_look_ups_and_the_plan(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(
        envelope("get_placement", {"workload": "burst-llm"}),
        envelope("submit_plan", {"actions": [SCALE_BURST], "rationale": "queue"}),
        output="json_object",
    )

    plan = planner.plan(*busy)

    assert plan.actions == (ScaleWorkload(workload="burst-llm", replicas=1),)
    first, second = server.completions
    fmt = first["response_format"]
    assert fmt["type"] == "json_object" and "tools" not in first
    names = {o["properties"]["tool"]["const"] for o in fmt["schema"]["anyOf"]}
    assert "submit_plan" in names and "get_placement" in names
    result = second["messages"][-1]
    assert result["role"] == "user" and result["content"].startswith("Result of get_placement:")
    assert FENCE_OPEN in result["content"]


def test_json_schema_is_openai_structured_output(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(
        envelope("submit_plan", {"actions": [], "rationale": "ok"}), output="json_schema"
    )

    planner.plan(*busy)

    fmt = server.completions[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "tool_call"


def test_a_500_naming_response_format_downgrades_to_json_object_for_good(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    """What llama-cpp-python's server answers to json_schema (PARTS.md)."""
    refusal = error(
        500, "Input should be 'text' or 'json_object' ('body', 'response_format', 'type')"
    )
    planner = make(
        refusal,
        envelope("submit_plan", {"actions": [SCALE_BURST], "rationale": "queue"}),
        output="json_schema",
    )

    plan = planner.plan(*busy)
    server.add(envelope("submit_plan", {"actions": [], "rationale": "calm"}))
    planner.plan(*busy)

    assert len(plan.actions) == 1
    kinds = [c["response_format"]["type"] for c in server.completions]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert planner.last_report is not None and planner.last_report.output_mode == "json_object"


def test_a_400_refusing_tools_downgrades_to_json_schema(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(
        error(400, "this model does not support tools"),
        envelope("submit_plan", {"actions": [], "rationale": "nothing"}),
    )

    planner.plan(*busy)

    first, second = server.completions
    assert "tools" in first and "tools" not in second
    assert second["response_format"]["type"] == "json_schema"


def test_a_json_answer_that_is_not_a_call_is_repaired_once(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(
        envelope("submit_plan", {"actions": [SCALE_BURST]}),
        envelope("submit_plan", {"actions": [SCALE_BURST], "rationale": "fixed"}),
        output="json_object",
    )

    plan = planner.plan(*busy)

    assert plan.rationale == "fixed"
    repair = server.completions[1]["messages"][-1]
    assert repair["role"] == "user" and "REJECTED" in repair["content"]
    assert "rationale" in repair["content"]
    assert json.loads(server.completions[1]["messages"][-2]["content"])["tool"] == "submit_plan"
