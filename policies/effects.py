"""What an action would change, read from the cluster state alone (no policy).

Shared by the policy schema (`Policy.may_approve` matches approval rules by pool and direction),
the rules and `apply`. Three notions:

- the *key* of an action: the thing it changes (`workload:render`, `node:ws-1`), used by cooldowns
  and to find two actions of one plan on the same thing. Every rotation shares the key
  `mode-rotation`: a cluster has one rotation in flight at a time.
- its *direction*: `up` adds capacity (scale up, place a replica, uncordon), `down` removes some
  (scale down, cordon, drain), `to_zero` scales a workload to zero, `neutral` changes nothing or
  moves capacity around (a rotation, a scale to the current count).
- the *pools* it touches: a workload's pool, the pools with replicas on a node, a mode's pools.
"""

from __future__ import annotations

from typing import Literal

from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)
from tools.model import ClusterState

Direction = Literal["up", "down", "to_zero", "neutral"]

ROTATION_KEY = "mode-rotation"


def action_key(action: Action) -> str:
    """The thing an action changes, as `kind:name`; empty for NoOp."""
    if type(action) is ScaleWorkload or type(action) is PlaceReplica:
        return f"workload:{action.workload}"
    if type(action) is CordonNode or type(action) is UncordonNode or type(action) is DrainNode:
        return f"node:{action.node}"
    if type(action) is RotateMode:
        return ROTATION_KEY
    return ""


def direction(action: Action, state: ClusterState) -> Direction:
    """Whether the action adds capacity, removes it, empties a workload or neither."""
    if type(action) is ScaleWorkload:
        workload = state.workload(action.workload)
        current = workload.desired_replicas if workload else 0
        if action.replicas == current:
            return "neutral"
        if action.replicas <= 0:
            return "to_zero"
        return "up" if action.replicas > current else "down"
    if type(action) is PlaceReplica or type(action) is UncordonNode:
        return "up"
    if type(action) is CordonNode or type(action) is DrainNode:
        return "down"
    return "neutral"


def pools_touched(action: Action, state: ClusterState) -> frozenset[str]:
    """The pools whose cards or replicas the action may change."""
    if type(action) is ScaleWorkload or type(action) is PlaceReplica:
        workload = state.workload(action.workload)
        return frozenset({workload.pool}) if workload else frozenset()
    if type(action) is CordonNode or type(action) is UncordonNode or type(action) is DrainNode:
        return frozenset(
            w.pool for w in state.workloads if any(action.node in p.nodes for p in w.placement)
        )
    if type(action) is RotateMode:
        mode = state.mode(action.target_mode)
        if mode is None:
            return frozenset()
        group = set(mode.nodes)
        names = {w for m in state.modes if group & set(m.nodes) for w in m.workloads}
        return frozenset(w.pool for w in state.workloads if w.name in names)
    return frozenset()  # NoOp, or something that is no action at all
