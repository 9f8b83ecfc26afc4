"""The LLM planner speaks OpenAI's protocol: typed tools out, look-ups answered, a plan back."""

from __future__ import annotations

import json

from agent.planners.llm.prompts import FENCE_CLOSE, FENCE_OPEN
from agent.planners.llm.tool_calls import TOOL_NAMES
from agent.signals.model import Signals
from lab.scripted_server import MODEL, ScriptedServer, call, content, submit
from tests.llm.conftest import PlannerFactory
from tools.actions import ScaleWorkload, action_schemas
from tools.model import ClusterState

SCALE_BURST = {"type": "scale_workload", "workload": "burst-llm", "replicas": 1, "reason": "queue"}


def test_a_look_up_then_a_plan(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    state, signals = busy
    planner = make(call("get_workload", {"name": "burst-llm"}), submit([SCALE_BURST]))

    plan = planner.plan(state, signals)

    assert plan.actions == (ScaleWorkload(workload="burst-llm", replicas=1, reason="queue"),)
    assert (plan.planner, plan.model) == ("llm", MODEL)
    second = server.completions[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "get_workload"
    result = second[-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_0"
    assert result["content"].startswith(FENCE_OPEN) and result["content"].endswith(FENCE_CLOSE)
    looked = json.loads(result["content"].split("\n")[1])
    assert looked["name"] == "burst-llm" and looked["replicas"] == 0


def test_the_report_counts_tokens_requests_and_look_ups(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(call("get_policy", {}), submit([SCALE_BURST]))

    planner.plan(*busy)

    report = planner.last_report
    assert report is not None
    assert (report.prompt_tokens, report.completion_tokens) == (200, 40)
    assert (report.requests, report.lookups, report.repairs) == (2, ("get_policy",), 0)
    assert (report.model, report.output_mode, report.failure) == (MODEL, "tools", None)
    assert report.endpoint == server.base_url + "/"
    assert 0 < report.latency_s < 5


def test_the_tools_offered_are_the_action_models(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    make(submit([SCALE_BURST])).plan(*busy)

    body = server.completions[0]
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in body["tools"]}
    assert tuple(offered) == TOOL_NAMES
    items = offered["submit_plan"]["properties"]["actions"]["items"]["anyOf"]
    assert {i["properties"]["type"]["const"] for i in items} == set(action_schemas())
    scale = next(i for i in items if i["properties"]["type"]["const"] == "scale_workload")
    assert scale["additionalProperties"] is False
    replicas = action_schemas()["scale_workload"]["properties"]["replicas"]
    assert scale["properties"]["replicas"] == {k: v for k, v in replicas.items() if k != "title"}
    sent = json.dumps(body["tools"])
    assert "maxLength" not in sent and "pattern" not in sent  # llama.cpp: a rule per char
    assert body["tool_choice"] == "required"
    assert body["messages"][0]["role"] == "system"


def test_the_model_is_asked_of_the_endpoint_when_unset(
    server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    from agent.planners.llm.planner import LLMPlanner
    from agent.planners.llm.settings import LLMSettings

    server.add(submit([SCALE_BURST]))
    planner = LLMPlanner(LLMSettings(base_url=server.base_url, deadline_s=5))

    plan = planner.plan(*busy)

    assert server.paths[0].endswith("/models")
    assert server.completions[0]["model"] == MODEL == plan.model


def test_idle_ticks_never_reach_the_model(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    state, signals = busy
    quiet = signals.model_copy(update={"findings": ()})

    plan = make().plan(state, quiet)

    assert plan.actions == () and server.requests == []


def test_the_last_turn_must_submit(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(call("get_node", {"name": "gx10-a"}), submit([]), max_steps=2)

    plan = planner.plan(*busy)

    assert plan.actions == ()
    last = server.completions[1]
    assert last["tool_choice"] == {"type": "function", "function": {"name": "submit_plan"}}
    assert [t["function"]["name"] for t in last["tools"]] == ["submit_plan"]


def test_a_server_that_ignores_required_gets_submit_plan_named(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    """llama-cpp-python answers prose to tool_choice="required"; naming the tool works."""
    planner = make(content("The queue is long, I think"), submit([SCALE_BURST]))

    plan = planner.plan(*busy)

    assert len(plan.actions) == 1
    assert planner.last_report is not None and planner.last_report.repairs == 0
    assert server.completions[1]["tool_choice"]["function"]["name"] == "submit_plan"
    server.add(submit([]))
    planner.plan(*busy)
    assert server.completions[2]["tool_choice"]["function"]["name"] == "submit_plan"


def test_the_repair_and_the_probe_come_on_top_of_the_steps(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    """What the real server did: prose, then a cut-short call; the repair still gets its turn."""
    cut_short = call("submit_plan", '{"actions": [], "rationa')
    planner = make(content("Let me think"), cut_short, submit([SCALE_BURST]), max_steps=2)

    plan = planner.plan(*busy)

    assert len(plan.actions) == 1 and len(server.completions) == 3
    assert planner.last_report is not None and planner.last_report.repairs == 1


def test_tool_choice_submit_plan_names_it_from_the_first_turn(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(submit([SCALE_BURST]), tool_choice="submit_plan")

    plan = planner.plan(*busy)

    assert len(plan.actions) == 1 and len(server.completions) == 1
    assert server.completions[0]["tool_choice"]["function"]["name"] == "submit_plan"
