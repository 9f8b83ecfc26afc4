"""The LLM planner's tools: their schemas, the parsing of a call, and the read-only look-ups.

Two kinds of tool are offered. Read-only look-ups (`get_node`, `get_workload`, `get_history`,
`get_policy`, `get_placement`, `get_memory_fit`) let the model look closer; they read the one
observation the decision started from and change nothing. `submit_plan` ends the decision: its
`actions` items are the Action models' own schemas (`tools.actions.action_schemas()`, the type
tag added back), and its arguments are validated by the same models, strictly: an unknown tool,
a wrong type, an extra field or a name the cluster does not have is rejected with a message the
model gets once to repair — nothing a model writes is ever executed here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agent.planners.prompts import MAX_LISTED, fenced, policy_brief, untrusted
from policies.history import History
from policies.model import Policy
from tools.actions import (
    NAME_PATTERN,
    Action,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    action_schemas,
)
from tools.errors import StewardError
from tools.model import ClusterState, Metric
from tools.placement import fit, pick_node

MAX_ACTIONS = 8
"""Most actions one plan may hold; the policy's change budget usually allows fewer."""


class CallRejected(Exception):
    """A tool call that cannot be used as written; `str(self)` goes back to the model to repair."""


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


NAME_DESCRIPTION = "An object name in the cluster."
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=253)]


class GetNode(_Args):
    """A node: readiness, labels, taints, memory, each card with its use and sharing."""

    name: Name


class GetWorkload(_Args):
    """A workload: replicas, queue and latency metrics, where its replicas run, annotations."""

    name: Name


class GetHistory(_Args):
    """The most recent actions Steward carried out, newest first."""

    limit: int = Field(default=10, ge=1, le=50)


class GetPolicy(_Args):
    """The policy: pool bounds, protected workloads, budgets, cooldowns, approval rules."""


class GetPlacement(_Args):
    """The nodes that fit one more replica of a workload, best first, with reasons."""

    workload: Name


class GetMemoryFit(_Args):
    """Whether a model fits at a context length in a serving mode, and the largest that does."""

    model: str = Field(min_length=1, max_length=200)
    context: int = Field(ge=1, le=16_777_216)
    mode: Literal["split", "cluster"] = "split"


class SubmitPlan(_Args):
    """Submit the plan and end the decision; the policy guard judges every action."""

    actions: tuple[Action, ...] = Field(max_length=MAX_ACTIONS)
    rationale: str = Field(min_length=1, max_length=2000)


LOOKUPS: dict[str, type[_Args]] = {
    "get_node": GetNode,
    "get_workload": GetWorkload,
    "get_history": GetHistory,
    "get_policy": GetPolicy,
    "get_placement": GetPlacement,
    "get_memory_fit": GetMemoryFit,
}
SUBMIT = "submit_plan"
TOOL_NAMES = (*LOOKUPS, SUBMIT)

_MODELS: dict[str, type[_Args]] = {**LOOKUPS, SUBMIT: SubmitPlan}
_ADAPTERS: dict[str, TypeAdapter[_Args]] = {name: TypeAdapter(m) for name, m in _MODELS.items()}


_NOT_SENT = frozenset({"title", "default", "pattern", "maxLength"})
"""Schema keys left out of what the model sees: they cost tokens, and the models still check
every one of them when the answer is validated."""


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
            "rationale": {"type": "string", "minLength": 1, "maxLength": 2000},
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


def parse_call(name: str, arguments: str) -> _Args:
    """One call's arguments validated strictly by its model; CallRejected says what is wrong."""
    if name not in _ADAPTERS:
        raise CallRejected(
            f"unknown tool {untrusted(name, 60)!r}; the tools are {', '.join(TOOL_NAMES)}"
        )
    try:
        parsed: _Args = _ADAPTERS[name].validate_json(arguments or "{}", strict=True)
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


def _metric(m: Metric, scale: float = 1.0) -> float | str:
    """A reading as a number when fresh, else with its status ('stale', 'missing') said."""
    if m.value is None:
        return m.status
    value = m.value * scale
    return round(value, 2) if m.usable else f"{value:.2f} ({m.status})"


class Lookups:
    """Answers the read-only tools from the decision's observation, policy and history."""

    def __init__(
        self,
        state: ClusterState,
        policy: Policy | None,
        history: Callable[[], History] | None,
    ) -> None:
        self.state = state
        self.policy = policy
        self.history = history

    def answer(self, call: _Args) -> str:
        """The fenced JSON result of one look-up; a look-up that finds nothing says so."""
        try:
            result = self._answer(call)
        except StewardError as exc:
            result = {"error": untrusted(str(exc), 300)}
        return fenced(result)

    def _answer(self, call: _Args) -> dict[str, Any]:
        if isinstance(call, GetNode):
            return self._node(call.name)
        if isinstance(call, GetWorkload):
            return self._workload(call.name)
        if isinstance(call, GetHistory):
            return self._history(call.limit)
        if isinstance(call, GetPlacement):
            return self._placement(call.workload)
        if isinstance(call, GetMemoryFit):
            report = fit(call.model, call.context, call.mode)
            return {
                "fits": report.fits,
                "largest_context": report.largest_context,
                "headroom_gib": round(report.headroom_bytes / 2**30, 1),
                "reasons": list(report.reasons),
            }
        brief = policy_brief(self.policy)
        if self.policy is not None:
            brief["cooldowns"] = self.policy.cooldowns.model_dump(mode="json")
        return brief

    def _node(self, name: str) -> dict[str, Any]:
        node = self.state.node(name)
        if node is None:
            return {"error": f"no node named {untrusted(name, 60)!r}"}
        return {
            "name": untrusted(node.name),
            "ready": node.ready,
            "cordoned": node.cordoned,
            "labels": {
                untrusted(k, 60): untrusted(v, 80) for k, v in list(node.labels.items())[:10]
            },
            "taints": [f"{untrusted(t.key, 60)}:{t.effect}" for t in node.taints[:6]],
            "memory_total_gib": round(node.memory_total_bytes / 2**30, 1),
            "unified_memory": node.unified_memory,
            "scheduler": node.scheduler.model_dump() if node.scheduler else None,
            "cards": [
                {
                    "index": g.index,
                    "model": untrusted(g.model, 60),
                    "utilization": _metric(g.utilization),
                    "memory_used_gib": _metric(g.memory_used_bytes, scale=2**-30),
                    "sharing": f"{g.sharing.mode}x{g.sharing.replicas}",
                    "clients": [untrusted(c, 80) for c in g.clients[:8]],
                }
                for g in node.gpus[:16]
            ],
        }

    def _workload(self, name: str) -> dict[str, Any]:
        w = self.state.workload(name)
        if w is None:
            return {"error": f"no workload named {untrusted(name, 60)!r}"}
        return {
            "name": untrusted(w.name),
            "kind": w.kind,
            "pool": untrusted(w.pool),
            "replicas": w.desired_replicas,
            "ready": w.ready_replicas,
            "cards_per_replica": w.cards_per_replica,
            "nodes_per_replica": w.nodes_per_replica,
            "model": untrusted(w.model) if w.model else None,
            "context_length": w.context_length,
            "queue_depth": _metric(w.queue_depth),
            "queue_wait_s": _metric(w.queue_wait_s),
            "tokens_per_s": _metric(w.tokens_per_s),
            "ttft_s": _metric(w.ttft_s),
            "placement": [
                {"nodes": [untrusted(n, 80) for n in p.nodes], "ready": p.ready}
                for p in w.placement[:MAX_LISTED]
            ],
            "annotations": {
                untrusted(k, 80): untrusted(v, 300) for k, v in list(w.annotations.items())[:8]
            },
        }

    def _history(self, limit: int) -> dict[str, Any]:
        if self.history is None:
            return {"executed": [], "note": "no history available to the planner"}
        executed = sorted(self.history().executed, key=lambda e: e.at, reverse=True)[:limit]
        return {
            "executed": [
                {"at": e.at.isoformat(), "action": untrusted(e.action.describe())} for e in executed
            ]
        }

    def _placement(self, name: str) -> dict[str, Any]:
        w = self.state.workload(name)
        if w is None:
            return {"error": f"no workload named {untrusted(name, 60)!r}"}
        candidates = pick_node(w, self.state)[:5]
        return {
            "candidates": [
                {
                    "rank": c.rank,
                    "nodes": [untrusted(n, 80) for n in c.nodes],
                    "free_slots_after": c.free_slots_after,
                    "reasons": [untrusted(r, 200) for r in c.reasons[:4]],
                }
                for c in candidates
            ],
            "fits_nowhere": not candidates,
        }
