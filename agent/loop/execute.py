"""Carrying one action out through the backend, and reading back whether it took effect.

`run_action` is the only place the loop calls a backend primitive: retried with tenacity on
`TemporaryError` (a 409, a timeout), never on a `PermanentError`. `applied` answers, from a fresh
observation, whether an action's effect is already there: act uses it to reconcile a decision
that a crash interrupted mid-way (nothing is run twice), verify uses it as the post-condition.
"""

from __future__ import annotations

from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from agent.loop.context import LoopContext
from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    NoOp,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)
from tools.backends.base import ActionResult
from tools.errors import PermanentError, TemporaryError
from tools.model import ClusterState

ATTEMPTS = 4


def run_action(ctx: LoopContext, action: Action, decision_id: str, dry_run: bool) -> ActionResult:
    """Carry `action` out (or dry-run it); a refused or failed action comes back with ok=False."""
    if isinstance(action, NoOp):
        return ActionResult(ok=True, dry_run=dry_run, message=action.describe())
    if isinstance(action, RotateMode):
        rotate = ctx.rotate
        assert rotate is not None, "LoopContext.__post_init__ always sets a rotator"
        return rotate(action, decision_id)
    retrying = Retrying(
        retry=retry_if_exception_type(TemporaryError),
        stop=stop_after_attempt(ATTEMPTS),
        wait=wait_exponential(multiplier=0.05, max=2.0),
        reraise=True,
    )
    try:
        return retrying(_primitive, ctx, action, dry_run)
    except TemporaryError as exc:
        return ActionResult(
            ok=False, dry_run=dry_run, message=f"gave up after {ATTEMPTS} attempts: {exc}"
        )
    except PermanentError as exc:
        return ActionResult(ok=False, dry_run=dry_run, message=str(exc))


def _primitive(ctx: LoopContext, action: Action, dry_run: bool) -> ActionResult:
    cluster = ctx.cluster
    if isinstance(action, ScaleWorkload):
        return cluster.scale(action.workload, action.replicas, dry_run=dry_run)
    if isinstance(action, PlaceReplica):
        return cluster.place(action.workload, action.node, action.gpus, dry_run=dry_run)
    if isinstance(action, CordonNode):
        return cluster.cordon(action.node, dry_run=dry_run)
    if isinstance(action, UncordonNode):
        return cluster.uncordon(action.node, dry_run=dry_run)
    if isinstance(action, DrainNode):
        return cluster.drain(action.node, action.deadline_s, dry_run=dry_run)
    raise TypeError(f"no backend primitive for action type {action.type}")


def applied(action: Action, state: ClusterState) -> tuple[bool | None, str]:
    """Whether `state` shows the action's effect: True, False, or None when it cannot tell."""
    if isinstance(action, ScaleWorkload):
        workload = state.workload(action.workload)
        if workload is None:
            return False, f"workload {action.workload} is not in the cluster"
        ok = workload.desired_replicas == action.replicas
        return ok, (
            f"{action.workload} wants {workload.desired_replicas} replica(s), "
            f"{workload.ready_replicas} ready"
        )
    if isinstance(action, PlaceReplica):
        workload = state.workload(action.workload)
        if workload is None:
            return False, f"workload {action.workload} is not in the cluster"
        on_node = [r for r in workload.placement if action.node in r.nodes]
        ready = sum(1 for r in on_node if r.ready)
        return bool(on_node), (
            f"{len(on_node)} replica(s) of {action.workload} on {action.node}, {ready} ready"
        )
    if isinstance(action, CordonNode | UncordonNode | DrainNode):
        node = state.node(action.node)
        if node is None:
            return False, f"node {action.node} is not in the cluster"
        want = not isinstance(action, UncordonNode)
        ok = node.cordoned == want
        if isinstance(action, DrainNode):
            left = [w.name for w in state.workloads for r in w.placement if action.node in r.nodes]
            ok = ok and not left
            return ok, f"{action.node} cordoned={node.cordoned}, replicas left: {left or 'none'}"
        return ok, f"{action.node} cordoned={node.cordoned}"
    if isinstance(action, RotateMode):
        active = state.active_mode.name if state.active_mode else None
        return active == action.target_mode, f"active mode: {active}"
    return True, "nothing to check"
