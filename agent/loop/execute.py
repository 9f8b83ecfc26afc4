"""Carrying one action out through the backend, and reading back whether it took effect.

`run_action` is the only place the loop calls a backend primitive: retried with tenacity on
`TemporaryError` (a 409, a timeout), never on a `PermanentError`. `applied` answers, from a fresh
observation, whether an action's effect is already there: act uses it to reconcile a decision
that a crash interrupted mid-way (nothing is run twice), verify uses it as the post-condition.
"""

from __future__ import annotations

from typing import assert_never

from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from agent.loop.context import LoopContext
from tools import actions
from tools.actions import Action
from tools.backends.base import ActionResult, DrainResult
from tools.errors import PermanentError, TemporaryError
from tools.model import ClusterState

ATTEMPTS = 4
DRAIN_POLL_S = 5.0
"""How often a drain in progress is looked at (in the daemon: at most once a tick)."""
DRAIN_GRACE_S = 120.0
"""How long past its deadline a drain may take to empty the node before it counts as failed."""


BackendPrimitive = (
    actions.ScaleWorkload
    | actions.PlaceReplica
    | actions.CordonNode
    | actions.UncordonNode
    | actions.DrainNode
)
"""The actions a backend primitive carries out (a rotation is a saga of them; a NoOp, none)."""


def run_action(ctx: LoopContext, action: Action, decision_id: str, dry_run: bool) -> ActionResult:
    """Carry `action` out (or dry-run it); a refused or failed action comes back with ok=False."""
    match action:
        case actions.NoOp():
            return ActionResult(ok=True, dry_run=dry_run, message=action.describe())
        case actions.RotateMode():
            rotate = ctx.rotate
            assert rotate is not None, "LoopContext.__post_init__ always sets a rotator"
            return rotate(action, decision_id)
        case (
            actions.ScaleWorkload()
            | actions.PlaceReplica()
            | actions.CordonNode()
            | actions.UncordonNode()
            | actions.DrainNode()
        ):
            return _on_backend(ctx, action, dry_run)
        case _:
            assert_never(action)


def _on_backend(
    ctx: LoopContext,
    primitive: BackendPrimitive,
    dry_run: bool,
) -> ActionResult:
    """One backend primitive, retried on what a retry can fix."""
    retrying = Retrying(
        retry=retry_if_exception_type(TemporaryError),
        stop=stop_after_attempt(ATTEMPTS),
        wait=wait_exponential(multiplier=0.05, max=2.0),
        reraise=True,
    )
    cluster = ctx.cluster
    try:
        match primitive:
            case actions.ScaleWorkload():
                return retrying(
                    cluster.scale, primitive.workload, primitive.replicas, dry_run=dry_run
                )
            case actions.PlaceReplica():
                return retrying(
                    cluster.place,
                    primitive.workload,
                    primitive.node,
                    primitive.gpus,
                    dry_run=dry_run,
                )
            case actions.CordonNode():
                return retrying(cluster.cordon, primitive.node, dry_run=dry_run)
            case actions.UncordonNode():
                return retrying(cluster.uncordon, primitive.node, dry_run=dry_run)
            case actions.DrainNode():
                return _drain(ctx, primitive, dry_run, retrying)
            case _:
                assert_never(primitive)
    except TemporaryError as exc:
        return ActionResult(
            ok=False, dry_run=dry_run, message=f"gave up after {ATTEMPTS} attempts: {exc}"
        )
    except PermanentError as exc:
        return ActionResult(ok=False, dry_run=dry_run, message=str(exc))


def _drain(
    ctx: LoopContext, action: actions.DrainNode, dry_run: bool, retrying: Retrying
) -> DrainResult:
    """Start the drain, then follow it on the loop's clock until the node is empty.

    In the daemon every wait suspends this decision (tools/suspend.py): the loop goes on ticking
    and deciding for other pools while the drain runs. What is still in flight when the deadline
    passes is counted as aborted (the backend cuts it off); past the deadline plus a grace the
    drain is given up on and reported as failed, the node left cordoned.
    """
    cluster, clock = ctx.cluster, ctx.loop_clock
    started = retrying(cluster.start_drain, action.node, action.deadline_s, dry_run=dry_run)
    if dry_run or not started.ok:
        return started
    began = clock.now()
    aborted = 0
    while True:
        progress = retrying(cluster.drain_status, action.node)
        waited = (clock.now() - began).total_seconds()
        if progress.done:
            break
        if waited >= action.deadline_s and not aborted:
            aborted = progress.in_flight
        if waited >= action.deadline_s + DRAIN_GRACE_S:
            return DrainResult(
                ok=False,
                dry_run=False,
                changed=True,
                outcome="failed",
                in_flight_aborted=aborted,
                message=f"drain {action.node}: {progress.message} after {waited:.0f} s "
                f"(deadline {action.deadline_s:.0f} s + {DRAIN_GRACE_S:.0f} s grace)",
            )
        clock.wait(min(DRAIN_POLL_S, max(1.0, action.deadline_s - waited)))
    return DrainResult(
        ok=True,
        dry_run=False,
        changed=True,
        outcome="deadline" if aborted else "drained",
        in_flight_aborted=aborted,
        message=f"drained {action.node} in {waited:.0f} s"
        + (f"; {aborted} request(s) aborted at the deadline" if aborted else ""),
    )


def applied(action: Action, state: ClusterState) -> tuple[bool | None, str]:
    """Whether `state` shows the action's effect: True, False, or None when it cannot tell."""
    match action:
        case actions.ScaleWorkload():
            workload = state.workload(action.workload)
            if workload is None:
                return False, f"workload {action.workload} is not in the cluster"
            ok = workload.desired_replicas == action.replicas
            return ok, (
                f"{action.workload} wants {workload.desired_replicas} replica(s), "
                f"{workload.ready_replicas} ready"
            )
        case actions.PlaceReplica():
            workload = state.workload(action.workload)
            if workload is None:
                return False, f"workload {action.workload} is not in the cluster"
            on_node = [r for r in workload.placement if action.node in r.nodes]
            ready = sum(1 for r in on_node if r.ready)
            return bool(on_node), (
                f"{len(on_node)} replica(s) of {action.workload} on {action.node}, {ready} ready"
            )
        case actions.CordonNode():
            return _schedulable(state, action.node, cordoned=True)
        case actions.UncordonNode():
            return _schedulable(state, action.node, cordoned=False)
        case actions.DrainNode():
            ok, said = _schedulable(state, action.node, cordoned=True)
            if state.node(action.node) is None:
                return ok, said
            left = [w.name for w in state.workloads for r in w.placement if action.node in r.nodes]
            return ok and not left, f"{said}, replicas left: {left or 'none'}"
        case actions.RotateMode():
            active = state.active_mode.name if state.active_mode else None
            return active == action.target_mode, f"active mode: {active}"
        case actions.NoOp():
            return True, "nothing to check"
        case _:
            assert_never(action)


def _schedulable(state: ClusterState, name: str, *, cordoned: bool) -> tuple[bool, str]:
    """Whether node `name` is (or is not) cordoned in `state`, and what it shows."""
    node = state.node(name)
    if node is None:
        return False, f"node {name} is not in the cluster"
    return node.cordoned == cordoned, f"{name} cordoned={node.cordoned}"
