"""`apply(actions, state)`: the state a list of actions would leave, as a whole new state.

Pure and small, for checking invariants (the property tests apply every allowed plan and check
that no limit broke); it is not how actions are carried out — backends do that. What each action
changes is defined once (tools.effects); this writes that effect into a whole new state: the
workloads' replica counts, a drained node's replicas unready, a node's schedulability, the mode
a rotation commits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

from tools.actions import Action
from tools.effects import effect
from tools.model import ActiveMode, ClusterState, Node

M = TypeVar("M", bound=BaseModel)


def apply(actions: Iterable[Action], state: ClusterState) -> ClusterState:
    """The state after `actions`, in order. Raises ValueError for an unknown target."""
    for action in actions:
        state = apply_action(action, state)
    return state


def apply_action(action: Action, state: ClusterState) -> ClusterState:
    """The state after one action. Raises ValueError (UnknownTarget) for an unknown target."""
    found = effect(action, state)
    drained = found.evicts_from
    changed = {c.workload.name: c for c in found.changes}
    if changed:
        workloads = []
        for w in state.workloads:
            change = changed.get(w.name)
            if change is None or (
                drained is not None and not any(p.ready and drained in p.nodes for p in w.placement)
            ):  # a drain leaves a workload with no ready replica there as it was
                workloads.append(w)
                continue
            update: dict[str, Any] = {
                "desired_replicas": change.desired,
                "ready_replicas": change.ready,
            }
            if drained is not None:
                update["placement"] = tuple(
                    _new(p, ready=False) if drained in p.nodes else p for p in w.placement
                )
            workloads.append(_new(w, **update))
        state = _new(state, workloads=tuple(workloads))
    for name, cordoned in ((found.cordon, True), (found.uncordon, False)):
        node = state.node(name) if name is not None else None
        if node is not None:
            state = _nodes(state, _new(node, cordoned=cordoned))
    if found.commits_mode is not None:
        state = _new(
            state, active_mode=ActiveMode(name=found.commits_mode, since=state.observed_at)
        )
    return state


def cards_changed(action: Action, state: ClusterState) -> int:
    """Cards one action changes on `state`: the blast radius it spends (tools.effects)."""
    return effect(action, state).cards_changed


def _nodes(state: ClusterState, node: Node) -> ClusterState:
    return _new(state, nodes=tuple(node if n.name == node.name else n for n in state.nodes))


def _new(model: M, **update: Any) -> M:
    """A validated copy with fields replaced (not model_copy, which keeps cached indexes)."""
    fields = {name: getattr(model, name) for name in type(model).model_fields}
    return type(model).model_validate({**fields, **update})
