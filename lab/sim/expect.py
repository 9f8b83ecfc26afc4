"""What an eval case expects of the agent, and what it did before the case began (docs/evals.md).

A scenario may carry an `expect:` block: actions that must be executed (by type, target and
time), actions that must never be executed (an executed one is an unsafe action), findings and
pending approvals that must show up, bounds on the end state, and bounds on queue wait. It may
also carry `history:`, actions executed before the start (an active cooldown, an hour's change
budget already spent), which the eval writes into the decision log before the first tick.

These are data only: the scorer (lab/scorecard) reads them against the decision log's
executed actions and the simulated cluster's end state, never against log wording.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ActionType = Literal[
    "scale_workload", "place_replica", "cordon_node", "uncordon_node", "drain_node", "rotate_mode"
]
FindingKind = Literal[
    "finding", "stale_metrics", "degraded_link", "shared_card_anomaly", "context_below_fit"
]
"""`finding`: something that needs a decision, about a workload (or `mode` for a favoured
mode); the others are notices: a workload's stale readings, a link path below its floor or on
the wrong GID, a node whose shared card is counted wrong."""


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ActionMatch(_Spec):
    """Executed actions this entry matches: a type, and optionally what and where."""

    type: ActionType
    target: str | None = None
    """The workload (scale, place), node (cordon, uncordon, drain) or mode (rotate) changed."""
    node: str | None = None
    """place_replica only: on this node."""
    zone_spread: bool = False
    """place_replica only: the replicas placed land in more than one zone (or rack)."""
    replicas_min: int | None = Field(default=None, ge=0)
    replicas_max: int | None = Field(default=None, ge=0)
    """scale_workload only: the replica count asked for lies within these."""
    after_s: float = Field(default=0.0, ge=0)
    within_s: float | None = Field(default=None, gt=0)
    """Seconds from the start by which (at or after `after_s`) it must have been executed."""
    count_min: int = Field(default=1, ge=1)
    """How many matching executions there must be (e.g. several replicas placed)."""


class Reach(_Spec):
    """A workload's replica count reaches `replicas` by `within_s`, however it was asked for
    (one placement, a scale, a preemption)."""

    replicas: int = Field(ge=0)
    ready: bool = False
    """Count ready replicas, not desired ones."""
    within_s: float = Field(gt=0)
    down: bool = False
    """Reach `replicas` or fewer (a scale-down) instead of that many or more."""


class Forbidden(_Spec):
    """Executed actions that must never happen: each one is counted as an unsafe action."""

    type: ActionType
    target: str | None = None
    node: str | None = None
    replicas_max: int | None = Field(default=None, ge=0)
    """scale_workload only: forbidden when it asks for at most this many (a scale-down)."""
    replicas_min: int | None = Field(default=None, ge=0)
    """scale_workload only: forbidden when it asks for at least this many (a scale-up)."""
    after_s: float = Field(default=0.0, ge=0)
    before_s: float | None = Field(default=None, gt=0)
    """Only within this time window (from the start)."""


class FindingMatch(_Spec):
    kind: FindingKind = "finding"
    about: str
    """The workload, link, node or `mode` the finding or notice is about."""
    within_s: float | None = Field(default=None, gt=0)


class ApprovalMatch(_Spec):
    """A proposal that must be waiting for a human at the end."""

    type: ActionType
    target: str | None = None


class WorkloadBound(_Spec):
    replicas_min: int | None = Field(default=None, ge=0)
    replicas_max: int | None = Field(default=None, ge=0)
    """The desired replica count at the end."""
    ready_min: int | None = Field(default=None, ge=0)


class EndState(_Spec):
    workloads: dict[str, WorkloadBound] = {}
    active_mode: str | None = None
    cordoned: tuple[str, ...] = ()
    schedulable: tuple[str, ...] = ()
    """Nodes that must not be cordoned at the end."""
    zones_min: dict[str, int] = {}
    """Workload -> how many zones (topology.kubernetes.io/zone) must hold its replicas."""


class WaitBound(_Spec):
    """Queue wait of a workload in the series, from `after_s` on."""

    p95_max_s: float | None = Field(default=None, ge=0)
    max_s: float | None = Field(default=None, ge=0)
    after_s: float = Field(default=0.0, ge=0)


class Expect(_Spec):
    actions: tuple[ActionMatch, ...] = ()
    never: tuple[Forbidden, ...] = ()
    findings: tuple[FindingMatch, ...] = ()
    approvals: tuple[ApprovalMatch, ...] = ()
    end: EndState = EndState()
    queue_wait: dict[str, WaitBound] = {}
    reach: dict[str, Reach] = {}
    max_actions: int | None = Field(default=None, ge=0)
    """At most this many executed actions in the whole run (no flapping, no churn)."""
    no_aborted_requests: tuple[str, ...] = ()
    """Workloads that must lose no in-flight request (drains and scale-downs let them finish)."""
    no_rejected_requests: tuple[str, ...] = ()
    """Workloads that must refuse no request (none sent to a model that cannot hold it)."""

    @property
    def checks(self) -> int:
        """How many things are scored (the `never` list is scored apart, as safety)."""
        end = self.end
        return (
            len(self.actions)
            + len(self.findings)
            + len(self.approvals)
            + len(end.workloads)
            + (end.active_mode is not None)
            + len(end.cordoned)
            + len(end.schedulable)
            + len(end.zones_min)
            + len(self.queue_wait)
            + len(self.reach)
            + (self.max_actions is not None)
            + len(self.no_aborted_requests)
            + len(self.no_rejected_requests)
        )


class PastAction(_Spec):
    """An action executed before the case starts, `ago_s` seconds before it."""

    ago_s: float = Field(gt=0, le=86_400)
    type: ActionType
    target: str
    """The workload, node or mode."""
    replicas: int | None = Field(default=None, ge=0)
    node: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> PastAction:
        if self.type == "scale_workload" and self.replicas is None:
            raise ValueError("a past scale_workload needs `replicas`")
        if self.type == "place_replica" and self.node is None:
            raise ValueError("a past place_replica needs `node`")
        return self
