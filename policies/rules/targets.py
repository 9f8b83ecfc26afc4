"""Is the action well-formed and does what it names exist? Unknown targets are denied.

A planner can be wrong or hostile and a model can be built without validation
(`model_construct`), so nothing about an action is taken on trust: counts must be whole and
non-negative, names must exist in the observed state, and workloads must belong to a pool the
policy manages.
"""

from __future__ import annotations

from typing import assert_never

from policies.rules.context import Context
from policies.rules.ledger import Denial
from tools import actions
from tools.actions import ACTION_TYPES, Action
from tools.effects import mode_group_workloads

ACTION_INVALID = "action.invalid"
TARGET_UNKNOWN = "target.unknown"
POOL_UNMANAGED = "pool.unmanaged"


def check(action: Action, ctx: Context) -> list[Denial]:
    """Denials that make every other rule moot: the action cannot even be understood."""
    if not isinstance(action, ACTION_TYPES):  # built without validation: anything can come
        return [Denial(ACTION_INVALID, f"{type(action).__name__} is not an action Steward knows")]
    state = ctx.state
    match action:
        case actions.ScaleWorkload():
            replicas = action.replicas
            if type(replicas) is not int or replicas < 0:
                message = f"replicas must be a whole number >= 0, not {replicas!r}"
                return [Denial(ACTION_INVALID, message)]
            return _workload(action.workload, ctx)
        case actions.PlaceReplica():
            found = _workload(action.workload, ctx)
            if found:
                return found
            node = state.node(action.node) if isinstance(action.node, str) else None
            if node is None:
                return [Denial(TARGET_UNKNOWN, f"there is no node {action.node!r} in the cluster")]
            on_node = {g.uuid for g in node.gpus}
            missing = [g for g in action.gpus if g not in on_node]
            if missing:
                return [Denial(TARGET_UNKNOWN, f"node {node.name} has no card {missing[0]!r}")]
            return []
        case actions.CordonNode() | actions.UncordonNode():
            return _node(action.node, ctx)
        case actions.DrainNode():
            found = _node(action.node, ctx)
            if not found and not 0 < action.deadline_s <= 3600:
                message = f"drain deadline {action.deadline_s!r} s is not in (0, 3600]"
                return [Denial(ACTION_INVALID, message)]
            return found
        case actions.RotateMode():
            return _mode(action.target_mode, ctx)
        case actions.NoOp():
            return []
        case _:
            assert_never(action)


def _node(name: object, ctx: Context) -> list[Denial]:
    if not isinstance(name, str) or ctx.state.node(name) is None:
        return [Denial(TARGET_UNKNOWN, f"there is no node {name!r} in the cluster")]
    return []


def _mode(name: object, ctx: Context) -> list[Denial]:
    state = ctx.state
    mode = state.mode(name) if isinstance(name, str) else None
    if mode is None:
        known = ", ".join(m.name for m in state.modes) or "none"
        return [Denial(TARGET_UNKNOWN, f"there is no mode {name!r} (modes: {known})")]
    up, down = mode_group_workloads(state, mode.name)
    for workload_name in up + down:
        workload = state.workload(workload_name)
        if workload is None and workload_name in up:
            return [
                Denial(
                    TARGET_UNKNOWN,
                    f"mode {mode.name} runs {workload_name!r}, which is not deployed",
                )
            ]
        if workload is not None and workload.pool not in ctx.policy.pools:
            return [_unmanaged(workload.name, workload.pool)]
    return []


def _workload(name: object, ctx: Context) -> list[Denial]:
    workload = ctx.state.workload(name) if isinstance(name, str) else None
    if workload is None:
        return [Denial(TARGET_UNKNOWN, f"there is no workload {name!r} in the cluster")]
    if workload.pool not in ctx.limits:  # the pools the policy lists, read once per judgement
        return [_unmanaged(workload.name, workload.pool)]
    return []


def _unmanaged(workload: str, pool: str) -> Denial:
    return Denial(
        POOL_UNMANAGED,
        f"{workload} is in pool {pool!r}, which the policy does not list under pools",
    )
