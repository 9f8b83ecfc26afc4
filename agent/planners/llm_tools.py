"""The LLM planner's tools: their schemas, and the strict parsing of what a model calls.

Two kinds of tool are offered. Read-only look-ups (`get_node`, `get_workload`, `get_history`,
`get_policy`, `get_placement`, `get_memory_fit`, answered by llm_lookups.py) let the model look
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
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agent.planners.prompts import untrusted
from tools.actions import (
    NAME_PATTERN,
    Action,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    action_schemas,
)
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
    """A node: readiness, labels, taints, memory, each card with its use and sharing."""

    name: Name


class GetWorkload(Args):
    """A workload: replicas, queue and latency metrics, where its replicas run, annotations."""

    name: Name


class GetHistory(Args):
    """The most recent actions Steward carried out, newest first."""

    limit: int = Field(default=10, ge=1, le=50)


class GetPolicy(Args):
    """The policy: pool bounds, protected workloads, budgets, cooldowns, approval rules."""


class GetPlacement(Args):
    """The nodes that fit one more replica of a workload, best first, with reasons."""

    workload: Name


class GetMemoryFit(Args):
    """Whether a model fits at a context length in a serving mode, and the largest that does."""

    model: str = Field(min_length=1, max_length=200)
    context: int = Field(ge=1, le=16_777_216)
    mode: Literal["split", "cluster"] = "split"


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
}
SUBMIT = "submit_plan"
TOOL_NAMES = (*LOOKUPS, SUBMIT)

_MODELS: dict[str, type[Args]] = {**LOOKUPS, SUBMIT: SubmitPlan}
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
    schema: dict[str, Any] = _compact(LOOKUPS[name].model_json_schema())
    schema.pop("description", None)
    schema.setdefault("properties", {})
    return schema


def description(name: str) -> str:
    model = SubmitPlan if name == SUBMIT else LOOKUPS[name]
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


def parse_call(name: str, arguments: str) -> Args:
    """One call's arguments validated strictly by its model; CallRejected says what is wrong."""
    if name not in _ADAPTERS:
        raise CallRejected(
            f"unknown tool {untrusted(name, 60)!r}; the tools are {', '.join(TOOL_NAMES)}"
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
        workload = getattr(action, "workload", None)
        node = getattr(action, "node", None)
        if workload is not None and state.workload(workload) is None:
            problems.append(f"{where}: no workload named {untrusted(workload, 60)!r}")
        if node is not None and state.node(node) is None:
            problems.append(f"{where}: no node named {untrusted(node, 60)!r}")
        if isinstance(action, RotateMode) and state.mode(action.target_mode) is None:
            problems.append(f"{where}: no mode named {untrusted(action.target_mode, 60)!r}")
        if isinstance(action, ScaleWorkload) and action.replicas > ceiling:
            problems.append(
                f"{where}: {action.replicas} replicas is more than the cluster's {ceiling} cards"
            )
        if isinstance(action, PlaceReplica) and action.gpus and (n := state.node(action.node)):
            unknown = set(action.gpus) - {g.uuid for g in n.gpus}
            if unknown:
                problems.append(f"{where}: {len(unknown)} card(s) not on {action.node}")
    if problems:
        raise CallRejected("; ".join(problems[:6]))
