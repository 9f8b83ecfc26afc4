"""Mode rotation inside the agent: the saga of tools/modes, under the policy, in the decision log.

tools/modes knows no policy and no audit log; this module joins them. It turns the policy's
rotation preconditions (link fraction, expected GID index, minimum dwell) into the saga's
settings, mirrors every journal entry into the decision log as a `mode_step` record, and gives
the loop its `Rotator` — the function the act step calls for a `RotateMode` — and the CLI the
same saga.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import structlog

from agent.audit import ApprovalRecord, AuditLog, ModeStep
from policies.model import Policy
from tools.actions import RotateMode
from tools.approval import Approval
from tools.backends.base import ActionResult, Cluster
from tools.backends.parts import Parts
from tools.clock import Clock
from tools.modes import (
    AdviceSettings,
    Journal,
    JournalEntry,
    PreflightLimits,
    Rotation,
    RotationOutcome,
    RotationPlan,
    RotationSettings,
    StepObserver,
    placement_fit,
)

log = structlog.get_logger("steward.rotation")


def rotation_settings(policy: Policy) -> RotationSettings:
    """The saga's preflight thresholds from the policy's `rotation` section.

    A policy that sets no link fraction (0) keeps the tools' default floor: a rotation never
    starts on a link nobody set a floor for.
    """
    rules = policy.rotation
    limits = PreflightLimits(expected_gid_index=rules.expected_gid_index)
    if rules.min_link_fraction > 0:
        limits = limits.model_copy(update={"link_min_fraction": rules.min_link_fraction})
    return RotationSettings(limits=limits)


def advice_settings(policy: Policy) -> AdviceSettings:
    """The 'when rotating pays' rule's hysteresis from the policy (its minimum dwell)."""
    return AdviceSettings(min_dwell_s=policy.rotation.min_dwell.total_seconds())


def audit_mirror(audit: AuditLog) -> StepObserver:
    """Write each journal entry into the decision log as a `mode_step` record."""

    def mirror(entry: JournalEntry, plan: RotationPlan) -> None:
        status = entry.status or entry.result or entry.kind
        detail = {"seq": entry.seq, "message": entry.message, **entry.detail}
        audit.append(
            ModeStep(
                rotation_id=entry.txn,
                step=entry.step or entry.kind,
                status=status,
                target_mode=plan.to_mode,
                decision_id=plan.decision_id,
                detail=detail,
            )
        )

    return mirror


def _record_cut(audit: AuditLog | None) -> Callable[[str], None]:
    """A torn journal tail cut off: a warning, and a record in the decision log when open."""

    def cut(message: str) -> None:
        log.warning("rotation journal: torn tail cut", detail=message)
        if audit is not None:
            audit.append(
                ModeStep(
                    rotation_id="journal",
                    step="journal",
                    status="torn_tail_cut",
                    detail={"message": message},
                )
            )

    return cut


def open_rotation(
    cluster: Cluster,
    data_dir: Path,
    policy: Policy,
    audit: AuditLog | None = None,
    *,
    parts: Parts | None = None,
    clock: Clock | None = None,
) -> Rotation:
    """The saga over `cluster`, journalled in `data_dir`, mirrored into `audit` if given.

    Its clock is `clock`, else the cluster's own (`parts`, else found from the cluster): the
    simulator's virtual clock moves while the saga waits, and the simulator is saved in the data
    dir after every move, so a process killed mid-rotation leaves it as a real cluster would be.
    """
    parts = parts or Parts.of(cluster)
    return Rotation(
        cluster,
        Journal.open(data_dir, on_cut=_record_cut(audit)),
        clock=clock or parts.clock,
        fit=placement_fit,
        settings=rotation_settings(policy),
        persist=lambda: parts.save(data_dir),
        on_step=audit_mirror(audit) if audit is not None else None,
    )


def approvals_of(audit: AuditLog, decision_id: str) -> tuple[Approval, ...]:
    """The human approvals the decision log holds for a decision (for the saga to record)."""
    found = []
    for record in audit.decision(decision_id):
        payload = record.payload
        if isinstance(payload, ApprovalRecord) and payload.approved:
            found.append(payload.approval())
    return tuple(found)


def result_of(outcome: RotationOutcome) -> ActionResult:
    """A rotation's outcome as the loop's action result: ok only when the target serves."""
    took = f"{outcome.duration_s:.0f} s, switch window {outcome.window_s:.0f} s"
    degraded = " (degraded)" if outcome.degraded else ""
    return ActionResult(
        ok=outcome.result == "committed",
        dry_run=False,
        changed=outcome.result != "refused",
        message=f"rotation {outcome.txn} {outcome.result}{degraded}: {outcome.message} ({took})",
    )


def loop_rotator(
    cluster: Cluster,
    data_dir: Path,
    policy: Policy,
    audit: AuditLog,
    *,
    parts: Parts | None = None,
    clock: Clock | None = None,
) -> Callable[[RotateMode, str], ActionResult]:
    """What the loop's act step calls for a RotateMode: one saga per decision, idempotent.

    In the daemon `clock` is its `LoopClock`: the saga's waits suspend the decision, and the loop
    goes on ticking while the rotation drains, switches and probes."""

    def rotate(action: RotateMode, decision_id: str) -> ActionResult:
        rotation = open_rotation(cluster, data_dir, policy, audit, parts=parts, clock=clock)
        outcome = rotation.rotate(
            action.target_mode, approvals_of(audit, decision_id), decision_id=decision_id
        )
        return result_of(outcome)

    return rotate
