"""What can be done to the cluster: the Action union.

Each action is a pydantic model with a stable `type` tag. These models are the single source of
truth for an action's shape: the JSON schema offered to an LLM as a tool, the validation of what
a planner proposes, the policy engine's input and the audit record are all derived from them.
No dict-shaped action travels through the code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,252}$"
"""Kubernetes-style names: what a workload, node or mode may be called."""

Name = Annotated[str, Field(pattern=NAME_PATTERN, description="An object name in the cluster.")]


class _Action(BaseModel, ABC):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str = Field(default="", max_length=2000, description="Why this action, in one line.")

    @property
    @abstractmethod
    def target(self) -> str:
        """The object the action changes: a workload, node or mode name."""

    @abstractmethod
    def describe(self) -> str:
        """One human sentence saying what the action does."""


class ScaleWorkload(_Action):
    """Set a workload's replica count (0 scales it to zero)."""

    type: Literal["scale_workload"] = "scale_workload"
    workload: Name
    replicas: int = Field(ge=0, description="The desired replica count after the action.")

    @property
    def target(self) -> str:
        return self.workload

    def describe(self) -> str:
        return f"scale {self.workload} to {self.replicas} replica(s)"


class PlaceReplica(_Action):
    """Start one more replica of a workload on a chosen node (and optionally chosen cards)."""

    type: Literal["place_replica"] = "place_replica"
    workload: Name
    node: Name
    gpus: tuple[str, ...] = Field(default=(), description="Card UUIDs; empty lets the node pick.")

    @property
    def target(self) -> str:
        return self.workload

    def describe(self) -> str:
        return f"place a replica of {self.workload} on {self.node}"


class CordonNode(_Action):
    """Mark a node unschedulable; running replicas stay."""

    type: Literal["cordon_node"] = "cordon_node"
    node: Name

    @property
    def target(self) -> str:
        return self.node

    def describe(self) -> str:
        return f"cordon {self.node}"


class UncordonNode(_Action):
    """Make a cordoned node schedulable again."""

    type: Literal["uncordon_node"] = "uncordon_node"
    node: Name

    @property
    def target(self) -> str:
        return self.node

    def describe(self) -> str:
        return f"uncordon {self.node}"


class DrainNode(_Action):
    """Cordon a node and evict its replicas, waiting for in-flight work up to a deadline."""

    type: Literal["drain_node"] = "drain_node"
    node: Name
    deadline_s: float = Field(default=300.0, gt=0, le=3600)

    @property
    def target(self) -> str:
        return self.node

    def describe(self) -> str:
        return f"drain {self.node} (deadline {self.deadline_s:g} s)"


class RotateMode(_Action):
    """Move a node group to another serving mode (e.g. 'cluster' <-> 'split') as a transaction."""

    type: Literal["rotate_mode"] = "rotate_mode"
    target_mode: Name

    @property
    def target(self) -> str:
        return self.target_mode

    def describe(self) -> str:
        return f"rotate to mode {self.target_mode}"


class NoOp(_Action):
    """Decide to do nothing, and say why."""

    type: Literal["noop"] = "noop"
    reason: str = Field(min_length=1, max_length=2000)

    @property
    def target(self) -> str:
        return ""

    def describe(self) -> str:
        return f"do nothing: {self.reason}"


Action = Annotated[
    ScaleWorkload | PlaceReplica | CordonNode | UncordonNode | DrainNode | RotateMode | NoOp,
    Field(discriminator="type"),
]
"""Any action; parse untrusted input with `parse_action`."""

ACTION_TYPES: tuple[type[_Action], ...] = (
    ScaleWorkload,
    PlaceReplica,
    CordonNode,
    UncordonNode,
    DrainNode,
    RotateMode,
    NoOp,
)

_ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
_ACTION_LIST_ADAPTER: TypeAdapter[list[Action]] = TypeAdapter(list[Action])


def type_tag(model: type[_Action]) -> str:
    """The stable `type` tag of an action class, e.g. 'scale_workload'."""
    default = model.model_fields["type"].default
    assert isinstance(default, str)
    return default


def parse_action(data: object) -> Action:
    """Validate one action from JSON-like data; raises pydantic.ValidationError."""
    return _ACTION_ADAPTER.validate_python(data)


def parse_action_json(text: str | bytes) -> Action:
    return _ACTION_ADAPTER.validate_json(text)


def parse_actions(data: object) -> list[Action]:
    return _ACTION_LIST_ADAPTER.validate_python(data)


def dump_action(action: Action) -> dict[str, Any]:
    """The canonical JSON form of an action (what the audit log and the LLM see)."""
    return action.model_dump(mode="json")


def action_schemas() -> dict[str, dict[str, Any]]:
    """One JSON schema per action type, keyed by its tag, generated from the models.

    The `type` tag is left out of the parameters: the tool's name carries it.
    """
    schemas: dict[str, dict[str, Any]] = {}
    for model in ACTION_TYPES:
        schema = model.model_json_schema()
        schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "type"}
        if "required" in schema:
            schema["required"] = [r for r in schema["required"] if r != "type"]
        schemas[type_tag(model)] = schema
    return schemas


def action_descriptions() -> dict[str, str]:
    """Each action type's one-line description (its docstring), keyed by tag."""
    return {type_tag(m): (m.__doc__ or "").strip().splitlines()[0] for m in ACTION_TYPES}


RATIONALE_MAX = 8000
"""Characters of a plan's rationale at most (it is logged with every decision)."""


def joined_notes(notes: list[str], limit: int = RATIONALE_MAX) -> str:
    """Notes joined into a rationale that fits `limit`: as many as fit, in order, then how many
    more were left out (a 1,000-node fleet can hold hundreds of workloads with a note each)."""
    text = ""
    for i, note in enumerate(notes):
        more = f"; … and {len(notes) - i} more note(s)"
        candidate = f"{text}; {note}" if text else note
        if len(candidate) + len(more) > limit:
            return (text + more) if text else more.removeprefix("; ")
        text = candidate
    return text


class Plan(BaseModel):
    """An ordered list of actions a planner proposes, with the reasoning behind it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actions: tuple[Action, ...] = ()
    rationale: str = Field(default="", max_length=RATIONALE_MAX)
    planner: str = "rules"
    model: str | None = None
    """The LLM that wrote the plan, if one did."""
