"""`apply(actions, state)`: the state a list of actions would leave, as a whole new state.

Pure and small, for checking invariants (the property tests apply every allowed plan and check
that no limit broke); it is not how actions are carried out — backends do that. It follows the
engine's conservative semantics, written independently against whole states: a scale keeps
min(ready, replicas) ready and new replicas are not ready yet; a drain cordons the node and makes
the replicas placed on it unready; a rotation commits (the target mode's workloads ready at >= 1
replica, the other modes of its node group at zero).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from policies.rules.ledger import mode_group_workloads
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
from tools.model import ActiveMode, ClusterState, Node, Workload

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def apply(actions: Iterable[Action], state: ClusterState) -> ClusterState:
    """The state after `actions`, in order. Raises ValueError for an unknown target."""
    for action in actions:
        state = apply_action(action, state)
    return state


def apply_action(action: Action, state: ClusterState) -> ClusterState:
    if isinstance(action, NoOp):
        return state
    if isinstance(action, ScaleWorkload):
        w = _need(state.workload(action.workload), action)
        return _set(state, w, action.replicas, min(w.ready_replicas, action.replicas))
    if isinstance(action, PlaceReplica):
        w = _need(state.workload(action.workload), action)
        return _set(state, w, w.desired_replicas + 1, w.ready_replicas)
    if isinstance(action, CordonNode | UncordonNode):
        node = _need(state.node(action.node), action)
        return _nodes(state, _new(node, cordoned=isinstance(action, CordonNode)))
    if isinstance(action, DrainNode):
        node = _need(state.node(action.node), action)
        state = _nodes(state, _new(node, cordoned=True))
        workloads = []
        for w in state.workloads:
            lost = sum(1 for p in w.placement if p.ready and node.name in p.nodes)
            placement = tuple(
                _new(p, ready=False) if node.name in p.nodes else p for p in w.placement
            )
            ready = max(0, w.ready_replicas - lost)
            workloads.append(_new(w, ready_replicas=ready, placement=placement) if lost else w)
        return _new(state, workloads=tuple(workloads))
    if isinstance(action, RotateMode):
        _need(state.mode(action.target_mode), action)
        up, down = mode_group_workloads(state, action.target_mode)
        for name in up:
            w = _need(state.workload(name), action)
            replicas = max(1, w.desired_replicas)
            state = _set(state, w, replicas, replicas)
        for name in down:
            found = state.workload(name)
            if found is not None:
                state = _set(state, found, 0, 0)
        active = ActiveMode(name=action.target_mode, since=state.observed_at)
        return _new(state, active_mode=active)
    raise ValueError(f"cannot apply {type(action).__name__}: not an action")


def cards_changed(action: Action, state: ClusterState) -> int:
    """Cards one action changes on `state`: the blast radius it spends.

    A scale: the difference in cards; a placement: one replica's cards; a drain: the cards of
    every replica on the node; a rotation: the larger of the cards freed and taken.
    """
    if isinstance(action, ScaleWorkload):
        w = _need(state.workload(action.workload), action)
        return abs(action.replicas - w.desired_replicas) * w.cards_per_replica
    if isinstance(action, PlaceReplica):
        return _need(state.workload(action.workload), action).cards_per_replica
    if isinstance(action, DrainNode):
        return sum(
            w.cards_per_replica
            for w in state.workloads
            for p in w.placement
            if action.node in p.nodes
        )
    if isinstance(action, RotateMode):
        after = apply_action(action, state)
        taken = freed = 0
        for w in state.workloads:
            moved = _need(after.workload(w.name), action).cards - w.cards
            taken, freed = taken + max(0, moved), freed + max(0, -moved)
        return max(taken, freed)
    return 0


def _set(state: ClusterState, w: Workload, desired: int, ready: int) -> ClusterState:
    new = _new(w, desired_replicas=desired, ready_replicas=ready)
    return _new(state, workloads=tuple(new if x.name == w.name else x for x in state.workloads))


def _nodes(state: ClusterState, node: Node) -> ClusterState:
    return _new(state, nodes=tuple(node if n.name == node.name else n for n in state.nodes))


def _new(model: M, **update: Any) -> M:
    """A validated copy with fields replaced (not model_copy, which keeps cached indexes)."""
    fields = {name: getattr(model, name) for name in type(model).model_fields}
    return type(model).model_validate({**fields, **update})


def _need(found: T | None, action: Action) -> T:
    if found is None:
        raise ValueError(f"cannot apply {action.describe()!r}: its target does not exist")
    return found
