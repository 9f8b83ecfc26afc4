"""The LLM planner's tools: their schemas, and the strict parsing of what a model calls.

Two kinds of tool are offered. Read-only look-ups (`get_node`, `get_workload`, `get_history`,
`get_policy`, `get_placement`, `get_memory_fit`, answered by lookups.py) let the model look
closer; they read the one observation the decision started from and change nothing.
`submit_plan` ends the decision: its `actions` items are the Action models' own schemas
(`tools.actions.action_schemas()`, the type tag added back), and its arguments are validated by
the same models, strictly: an unknown tool, a wrong type, an extra field or a name the cluster
does not have is rejected with a message the model gets once to repair — nothing a model writes
is ever executed here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agent.planners.llm.prompts import untrusted
from tools import actions
from tools.actions import NAME_PATTERN, Action, action_schemas
from tools.effects import node_of, workload_of
from tools.model import ClusterState

MAX_ACTIONS = 8
"""Most actions one plan may hold; the policy's change budget usually allows fewer."""


class CallRejected(Exception):
    """A tool call that cannot be used as written; `str(self)` goes back to the model to repair."""


class Args(BaseModel):
    """Arguments of one tool: frozen, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


NAME_DESCRIPTION = "An object name in the cluster."
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)]


class GetNode(Args):
    """A node: readiness, labels, taints, memory, cards."""

    name: Name


class GetWorkload(Args):
    """A workload: replicas, metrics, placement, annotations."""

    name: Name


class GetHistory(Args):
    """Recent actions carried out, newest first."""

    limit: int = Field(default=10, ge=1, le=50)


class GetPolicy(Args):
    """The policy: pools, protection, budgets, cooldowns, approvals."""


class GetPlacement(Args):
    """Nodes that fit one more replica, best first."""

    workload: Name


class GetMemoryFit(Args):
    """Whether a model fits at a context in a mode."""

    model: str = Field(min_length=1, max_length=200)
    context: int = Field(ge=1, le=16_777_216)
    mode: Literal["split", "cluster"] = "split"


class GetStatus(Args):
    """Nodes, active mode, workloads' replicas and queues."""


class GetForecast(Args):
    """A workload's demand trend and capacity figures."""

    workload: Name


class GetModeStatus(Args):
    """Serving modes, and whether a rotation pays now."""


class GetModePreflight(Args):
    """Preflight checks of a rotation to a mode."""

    target: Name


class GetDryRunPlan(Args):
    """The rules planner's plan now, with verdicts."""


class SearchAudit(Args):
    """Decision log entries mentioning text, newest first."""

    text: str = Field(default="", max_length=100)
    limit: int = Field(default=10, ge=1, le=30)


class ExplainDecision(Args):
    """One decision of the log, told whole."""

    decision_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


class Answer(Args):
    """Answer the question and end: the answer in a few sentences, the decision ids it relies
    on, and, only if the question asks for a change, the proposed actions (they go to the policy
    guard and to approval; nothing runs here)."""

    text: str = Field(min_length=1, max_length=4000)
    decision_ids: tuple[str, ...] = Field(default=(), max_length=20)
    proposal: tuple[Action, ...] = Field(default=(), max_length=MAX_ACTIONS)


class SubmitPlan(Args):
    """Submit the plan and end the decision; the policy guard judges every action."""

    actions: tuple[Action, ...] = Field(max_length=MAX_ACTIONS)
    rationale: str = Field(min_length=1, max_length=2000)


LOOKUPS: dict[str, type[Args]] = {
    "get_node": GetNode,
    "get_workload": GetWorkload,
    "get_history": GetHistory,
    "get_policy": GetPolicy,
    "get_placement": GetPlacement,
    "get_memory_fit": GetMemoryFit,
    "get_status": GetStatus,
    "get_forecast": GetForecast,
    "get_mode_status": GetModeStatus,
    "get_mode_preflight": GetModePreflight,
    "get_dry_run_plan": GetDryRunPlan,
    "search_audit": SearchAudit,
    "explain_decision": ExplainDecision,
}
"""The read-only tools: they read the observation, the policy and the log, and change nothing."""
SUBMIT = "submit_plan"
ANSWER = "answer"
TOOL_NAMES = (*LOOKUPS, SUBMIT)
"""What a deliberation is offered: the read-only tools and submit_plan (the typed actions)."""
ASK_TOOL_NAMES = (*LOOKUPS, ANSWER)
"""What a question (`steward ask`, Slack) is offered: the read-only tools and answer."""

_MODELS: dict[str, type[Args]] = {**LOOKUPS, SUBMIT: SubmitPlan, ANSWER: Answer}
_ADAPTERS: dict[str, TypeAdapter[Args]] = {name: TypeAdapter(m) for name, m in _MODELS.items()}


_NOT_SENT = frozenset({"title", "default", "pattern", "maxLength"})
"""Schema keys left out of what the model sees: they cost tokens, an upper length bound becomes
one grammar rule per character on llama.cpp (2,000 for a rationale: "failed to parse grammar";
the name pattern's {0,252} likewise), and the models still check every one of them when the
answer is validated. `minLength` stays: it is cheap and keeps a constrained model from writing
an empty rationale."""


def _compact(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _compact(v) for k, v in schema.items() if k not in _NOT_SENT}
        if out.get("type") == "string" and out.get("description") == NAME_DESCRIPTION:
            del out["description"]
        return out
    if isinstance(schema, list):
        return [_compact(v) for v in schema]
    return schema


def submit_plan_schema() -> dict[str, Any]:
    """submit_plan's parameters, its action items generated from the Action models."""
    items = []
    for tag, schema in action_schemas().items():
        tagged = _compact(schema)
        tagged.pop("description", None)  # the system prompt lists every action type
        tagged["properties"]["reason"] = {"type": "string"}
        tagged["properties"] = {"type": {"const": tag}, **tagged["properties"]}
        tagged["required"] = ["type", *tagged.get("required", [])]
        items.append(tagged)
    return {
        "type": "object",
        "properties": {
            "actions": {"type": "array", "maxItems": MAX_ACTIONS, "items": {"anyOf": items}},
            "rationale": {"type": "string", "minLength": 1},
        },
        "required": ["actions", "rationale"],
        "additionalProperties": False,
    }


def parameters(name: str) -> dict[str, Any]:
    """The JSON schema of one tool's arguments."""
    if name == SUBMIT:
        return submit_plan_schema()
    if name == ANSWER:
        actions = submit_plan_schema()["properties"]["actions"]
        return {
            "type": "object",
            "properties": {
                "text": {"type": "string", "minLength": 1},
                "decision_ids": {"type": "array", "items": {"type": "string"}},
                "proposal": actions,
            },
            "required": ["text"],
            "additionalProperties": False,
        }
    schema: dict[str, Any] = _compact(LOOKUPS[name].model_json_schema())
    schema.pop("description", None)
    schema.setdefault("properties", {})
    return schema


def description(name: str) -> str:
    model = _MODELS[name]
    return (model.__doc__ or "").strip()


def tool_specs(names: Sequence[str] = TOOL_NAMES) -> list[dict[str, Any]]:
    """The tools in the OpenAI `tools` shape."""
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": description(n),
                "parameters": parameters(n),
            },
        }
        for n in names
    ]


def envelope_schema(names: Sequence[str] = TOOL_NAMES) -> dict[str, Any]:
    """For JSON-only servers: one answer is `{"tool": NAME, "arguments": {...}}`."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"tool": {"const": n}, "arguments": parameters(n)},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
            for n in names
        ]
    }


class Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    arguments: dict[str, Any]


def _errors(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors(include_url=False)[:6]:
        loc = ".".join(str(p) for p in e["loc"]) or "(root)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def parse_envelope(content: str | None) -> tuple[str, str]:
    """A JSON-mode answer as (tool name, arguments JSON); CallRejected if it is not one."""
    if not content or not content.strip():
        raise CallRejected('empty answer; answer with {"tool": NAME, "arguments": {...}}')
    try:
        env = Envelope.model_validate_json(content, strict=True)
    except ValidationError as exc:
        raise CallRejected(f"the answer is not a tool call object: {_errors(exc)}") from exc
    return env.tool, json.dumps(env.arguments)


def parse_call(name: str, arguments: str, offered: Sequence[str] = TOOL_NAMES) -> Args:
    """One call's arguments validated strictly by its model; CallRejected says what is wrong
    (a tool that exists but was not offered is refused like an unknown one)."""
    if name not in _ADAPTERS or name not in offered:
        raise CallRejected(
            f"unknown tool {untrusted(name, 60)!r}; the tools are {', '.join(offered)}"
        )
    try:
        parsed: Args = _ADAPTERS[name].validate_json(arguments or "{}", strict=True)
    except ValidationError as exc:
        raise CallRejected(f"{name}: invalid arguments: {_errors(exc)}") from exc
    return parsed


def check_plan(plan: SubmitPlan, state: ClusterState) -> None:
    """Names that exist and replica counts the cluster could hold, or CallRejected."""
    problems: list[str] = []
    ceiling = max(state.gpu_count, 1)
    for i, action in enumerate(plan.actions):
        where = f"actions.{i} ({action.type})"
        workload, node = workload_of(action), node_of(action)
        if workload is not None and state.workload(workload) is None:
            problems.append(f"{where}: no workload named {untrusted(workload, 60)!r}")
        if node is not None and state.node(node) is None:
            problems.append(f"{where}: no node named {untrusted(node, 60)!r}")
        match action:
            case actions.RotateMode():
                if state.mode(action.target_mode) is None:
                    problems.append(f"{where}: no mode named {untrusted(action.target_mode, 60)!r}")
            case actions.ScaleWorkload():
                if action.replicas > ceiling:
                    problems.append(
                        f"{where}: {action.replicas} replicas is more than the cluster's "
                        f"{ceiling} cards"
                    )
            case actions.PlaceReplica():
                if action.gpus and (n := state.node(action.node)):
                    unknown = set(action.gpus) - {g.uuid for g in n.gpus}
                    if unknown:
                        problems.append(f"{where}: {len(unknown)} card(s) not on {action.node}")
            case (
                actions.CordonNode() | actions.UncordonNode() | actions.DrainNode() | actions.NoOp()
            ):
                pass  # their names are checked above
            case _:
                assert_never(action)
    if problems:
        raise CallRejected("; ".join(problems[:6]))
