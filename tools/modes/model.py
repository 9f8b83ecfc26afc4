"""The rotation's typed inputs and outputs: settings, the plan written at `begin`, the outcome.

The plan is computed once, from the observation before anything changes, and written into the
journal's first entry: after a crash, the transaction is finished from what the plan says (which
workloads to bring back, at how many replicas), not from a world the crash may have left
half-changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.approval import Approval
from tools.errors import InvalidInput
from tools.model import ClusterState
from tools.modes.journal import Result, Transaction
from tools.modes.preflight import Check, PreflightLimits, PreflightReport


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RotationSettings(_Model):
    """Deadlines, floors and retry budget of one rotation.

    The defaults suit the homelab (models load in 3–4 minutes); the agent layer passes the
    policy's link fraction, expected GID and tokens/s floor.
    """

    limits: PreflightLimits = PreflightLimits()
    drain_deadline_s: float = Field(default=30.0, ge=0)
    """How long in-flight requests may finish before the outgoing replicas are scaled down.
    The backend's own termination grace (Kubernetes' terminationGracePeriodSeconds; 120 s in
    the simulator) then bounds what is left, so a switch frees memory within the two."""
    drain_max_s: float = Field(default=900.0, ge=0)
    """Past the deadline, a drain whose in-flight requests are still finishing (fewer than
    `drain_stall_s` ago) waits on, up to this long in all: long generations are not cut while
    they make progress. Only a stalled drain, or one this old, aborts what is left."""
    drain_stall_s: float = Field(default=300.0, gt=0)
    gone_deadline_s: float = Field(default=180.0, gt=0)
    """How long an outgoing replica may take to free its memory."""
    ready_deadline_s: float = Field(default=900.0, gt=0)
    """How long an incoming replica may take to load its model and become ready."""
    poll_s: float = Field(default=5.0, gt=0)
    probe_attempts: int = Field(default=3, ge=1)
    min_tokens_per_s: float | None = Field(default=None, ge=0)
    """The policy's floor for a probe's tokens/s; None: `probe_floor_fraction` of the mode's
    expected single-stream speed."""
    probe_floor_fraction: float = Field(default=0.5, gt=0, le=1)
    retry_attempts: int = Field(default=5, ge=1)
    """Calls per primitive when the backend fails transiently (tools.errors.TemporaryError)."""
    unplaced_grace_s: float = Field(default=30.0, ge=0)
    """An incoming replica still unplaced this long while one of its mode's nodes is down is
    given up on at once, instead of waiting for the whole ready deadline."""


class RotationPlan(_Model):
    """What the transaction will do, fixed at `begin` and written to the journal."""

    from_mode: str | None
    to_mode: str
    outgoing: dict[str, int]
    """Workloads serving now on the mode's nodes, with the replicas to restore on rollback."""
    incoming: dict[str, int]
    """The target mode's workloads and the replicas to start."""
    approvals: tuple[Approval, ...] = ()
    decision_id: str | None = None
    """The agent's decision this rotation carries out (one rotation per decision)."""


def plan_rotation(
    state: ClusterState,
    target: str,
    approvals: tuple[Approval, ...] = (),
    decision_id: str | None = None,
) -> RotationPlan:
    """What a rotation to `target` would do, from one observation; changes nothing.

    Outgoing: every workload of another mode that shares a node with the target and has
    replicas now; incoming: the target's workloads, at their current count or one.
    """
    mode = state.mode(target)
    incoming: dict[str, int] = {}
    outgoing: dict[str, int] = {}
    if mode is not None:
        for name in mode.workloads:
            workload = state.workload(name)
            incoming[name] = max(1, workload.desired_replicas if workload else 1)
        for other in state.modes:
            if other.name == target or not set(other.nodes) & set(mode.nodes):
                continue
            for name in other.workloads:
                workload = state.workload(name)
                if workload is not None and workload.desired_replicas > 0:
                    outgoing[name] = workload.desired_replicas
    return RotationPlan(
        from_mode=state.active_mode.name if state.active_mode else None,
        to_mode=target,
        outgoing=outgoing,
        incoming=incoming,
        approvals=approvals,
        decision_id=decision_id,
    )


class ProbeCheck(_Model):
    """One workload's probe judged against the floors."""

    workload: str
    ok: bool
    ready_replicas: int = 0
    tokens_per_s: float | None = None
    context_length: int | None = None
    message: str


Phase = Literal["preflight", "drain", "switch", "probe", "commit", "rollback", "fallback"]


class RotationOutcome(_Model):
    """How one transaction ended, as `steward mode rotate --json` prints it."""

    txn: str
    decision_id: str | None = None
    """The agent's decision this rotation carried out, if any."""
    from_mode: str | None
    to_mode: str
    result: Result
    final_mode: str | None
    """The mode serving at the end (None only when nothing serves: result 'failed')."""
    serving: tuple[str, ...] = ()
    """Workloads whose probe passed at the end."""
    degraded: bool = False
    """True when the final mode serves with fewer workloads than it has."""
    message: str
    started_at: datetime
    ended_at: datetime
    window_opened_at: datetime | None = None
    """Start of the declared switch window: traffic to the outgoing mode stopped."""
    window_closed_at: datetime | None = None
    aborted_requests: int = 0
    """Requests still in flight at the drain deadline: cut off when their replicas go (the
    backend's termination grace may let some of them finish)."""
    resumed: bool = False
    """True when this process finished a transaction a crashed one had started."""
    preflight: PreflightReport | None = None
    probes: tuple[ProbeCheck, ...] = ()

    @property
    def duration_s(self) -> float:
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def window_s(self) -> float:
        if self.window_opened_at is None or self.window_closed_at is None:
            return 0.0
        return (self.window_closed_at - self.window_opened_at).total_seconds()


def outcome_of(found: Transaction, resumed: bool = False) -> RotationOutcome:
    """A finished transaction's outcome, rebuilt from its journal entries alone."""
    end = found.end
    if end is None or end.result is None:
        raise InvalidInput(f"transaction {found.txn} has not ended; resume it first")
    plan = RotationPlan.model_validate(found.begin.detail["plan"])
    detail = end.detail
    final_mode = detail.get("final_mode")
    serving = detail.get("serving")
    opened = next(
        (e.at for e in found.entries if e.step == "drain" and e.status == "started"), None
    )
    drained = [e for e in found.entries if e.step == "drain" and e.status == "done"]
    aborted = drained[-1].detail.get("aborted", 0) if drained else 0
    checks = [e for e in found.entries if e.step == "preflight" and e.status != "started"]
    report = None
    if checks:
        raw = checks[-1].detail.get("checks", [])
        report = PreflightReport(
            target=plan.to_mode,
            checks=tuple(Check.model_validate(c) for c in raw) if isinstance(raw, list) else (),
        )
    probed = [e for e in found.entries if isinstance(e.detail.get("probes"), list)]
    raw_probes = probed[-1].detail["probes"] if probed else []
    probes = (
        tuple(ProbeCheck.model_validate(p) for p in raw_probes)
        if isinstance(raw_probes, list)
        else ()
    )
    return RotationOutcome(
        txn=found.txn,
        decision_id=plan.decision_id,
        from_mode=plan.from_mode,
        to_mode=plan.to_mode,
        result=end.result,
        final_mode=final_mode if isinstance(final_mode, str) else None,
        serving=tuple(str(s) for s in serving) if isinstance(serving, list) else (),
        degraded=detail.get("degraded") is True,
        message=end.message,
        started_at=found.begin.at,
        ended_at=end.at,
        window_opened_at=opened,
        window_closed_at=end.at if opened is not None else None,
        aborted_requests=aborted if isinstance(aborted, int) else 0,
        resumed=resumed,
        preflight=report,
        probes=probes,
    )
