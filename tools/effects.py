"""What each action means: the one definition of what it changes, next to the Action union.

Everything that asks "what does this action do to the cluster?" asks here: the policy engine
(its running account of a plan, the cooldowns, the approval rules), the whole-state `apply` of
the property tests, the sentence `steward plan` prints next to each verdict. Each question is a
`match` on the Action union ending in `assert_never`, so a new action type fails type checking
here until its meaning is written down.

- the *key* of an action: the thing it changes (`workload:render`, `node:ws-1`), used by cooldowns
  and to find two actions of one plan on the same thing. Every rotation shares the key
  `mode-rotation`: a cluster has one rotation in flight at a time.
- its *direction*: `up` adds capacity (scale up, place a replica, uncordon), `down` removes some
  (scale down, cordon, drain), `to_zero` scales a workload to zero, `neutral` changes nothing or
  moves capacity around (a rotation, a scale to the current count).
- the *pools* it touches: a workload's pool, the pools with replicas on a node, a mode's pools.
- its *effect*: the workloads' desired and ready replicas after it, the node it cordons or
  uncordons, the mode it commits and the cards it changes (the blast radius it spends).

Semantics (conservative): a scale keeps min(ready, replicas) ready and new replicas are not ready
yet; a placement adds one replica, not ready yet; a drain cordons the node and makes every
replica placed on it unready; a rotation commits (the target mode's workloads ready at >= 1
replica, the other modes of its node group at zero) and changes the larger of the cards it
frees and takes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, assert_never

from tools import actions
from tools.actions import Action
from tools.model import ClusterState, Workload

Direction = Literal["up", "down", "to_zero", "neutral"]

ROTATION_KEY = "mode-rotation"


class UnknownTarget(ValueError):
    """An action names a workload, node or mode the state does not hold."""


class Change(NamedTuple):
    """One workload's desired and ready replicas after an action."""

    workload: Workload
    desired: int
    ready: int


@dataclass(slots=True)
class Effect:
    """What one action changes: workloads' desired and ready replicas, node schedulability."""

    changes: tuple[Change, ...] = ()
    cordon: str | None = None
    uncordon: str | None = None
    cards_changed: int = 0
    evicts_from: str | None = None
    """A drain's node: every replica placed there becomes unready (`changes` count it)."""
    commits_mode: str | None = None
    """A rotation's target: the mode active after it."""


class Replicas(Protocol):
    """The replica counts an effect is worked out on: the observed ones, or a plan's so far."""

    def desired_of(self, w: Workload, /) -> int: ...

    def ready_of(self, w: Workload, /) -> int: ...


class Observed:
    """The replica counts as observed (before any action)."""

    def desired_of(self, w: Workload, /) -> int:
        return w.desired_replicas

    def ready_of(self, w: Workload, /) -> int:
        return w.ready_replicas


OBSERVED = Observed()

OnNode = Callable[[str], Sequence[tuple[Workload, int, int]]]
"""node -> (workload, its ready replicas there, its replicas there), for the workloads on it."""


def action_key(action: Action) -> str:
    """The thing an action changes, as `kind:name`; empty for NoOp."""
    match action:
        case actions.ScaleWorkload() | actions.PlaceReplica():
            return f"workload:{action.workload}"
        case actions.CordonNode() | actions.UncordonNode() | actions.DrainNode():
            return f"node:{action.node}"
        case actions.RotateMode():
            return ROTATION_KEY
        case actions.NoOp():
            return ""
        case _:
            assert_never(action)


def node_of(action: Action) -> str | None:
    """The node an action names, if any."""
    match action:
        case (
            actions.PlaceReplica()
            | actions.CordonNode()
            | actions.UncordonNode()
            | actions.DrainNode()
        ):
            return action.node
        case actions.ScaleWorkload() | actions.RotateMode() | actions.NoOp():
            return None
        case _:
            assert_never(action)


def workload_of(action: Action) -> str | None:
    """The one workload whose replica count an action sets, if it names one."""
    match action:
        case actions.ScaleWorkload() | actions.PlaceReplica():
            return action.workload
        case (
            actions.CordonNode()
            | actions.UncordonNode()
            | actions.DrainNode()
            | actions.RotateMode()
            | actions.NoOp()
        ):
            return None
        case _:
            assert_never(action)


def direction(action: Action, state: ClusterState) -> Direction:
    """Whether the action adds capacity, removes it, empties a workload or neither."""
    match action:
        case actions.ScaleWorkload():
            workload = state.workload(action.workload)
            current = workload.desired_replicas if workload else 0
            if action.replicas == current:
                return "neutral"
            if action.replicas <= 0:
                return "to_zero"
            return "up" if action.replicas > current else "down"
        case actions.PlaceReplica() | actions.UncordonNode():
            return "up"
        case actions.CordonNode() | actions.DrainNode():
            return "down"
        case actions.RotateMode() | actions.NoOp():
            return "neutral"
        case _:
            assert_never(action)


def pools_touched(action: Action, state: ClusterState) -> frozenset[str]:
    """The pools whose cards or replicas the action may change."""
    match action:
        case actions.ScaleWorkload() | actions.PlaceReplica():
            workload = state.workload(action.workload)
            return frozenset({workload.pool}) if workload else frozenset()
        case actions.CordonNode() | actions.UncordonNode() | actions.DrainNode():
            node = action.node
            return frozenset(
                w.pool for w in state.workloads if any(node in p.nodes for p in w.placement)
            )
        case actions.RotateMode():
            mode = state.mode(action.target_mode)
            if mode is None:
                return frozenset()
            group = set(mode.nodes)
            names = {w for m in state.modes if group & set(m.nodes) for w in m.workloads}
            return frozenset(w.pool for w in state.workloads if w.name in names)
        case actions.NoOp():
            return frozenset()
        case _:
            assert_never(action)


def mode_group_workloads(state: ClusterState, target: str) -> tuple[list[str], list[str]]:
    """(workloads the target mode runs, workloads of the other modes sharing its nodes)."""
    mode = state.mode(target)
    if mode is None:
        return [], []
    group = set(mode.nodes)
    up = list(dict.fromkeys(mode.workloads))
    down = [
        name
        for other in state.modes
        if other.name != target and group & set(other.nodes)
        for name in other.workloads
        if name not in up
    ]
    return up, list(dict.fromkeys(down))


def replicas_on(state: ClusterState) -> OnNode:
    """`OnNode` read from the state's placements (the engine keeps its own index instead)."""

    def on(node: str) -> list[tuple[Workload, int, int]]:
        out = []
        for w in state.workloads:
            there = [p for p in w.placement if node in p.nodes]
            if there:
                out.append((w, sum(1 for p in there if p.ready), len(there)))
        return out

    return on


def effect(
    action: Action,
    state: ClusterState,
    counts: Replicas = OBSERVED,
    on_node: OnNode | None = None,
) -> Effect:
    """What `action` would change on `state`, whose replica counts are `counts` (the observed
    ones, or a plan's so far); `on_node`: the replicas on a node, if the caller keeps an index.

    Raises UnknownTarget when the action names a workload, node or mode `state` lacks.
    """
    match action:
        case actions.ScaleWorkload():
            w = _workload(state, action.workload, action)
            old, replicas = counts.desired_of(w), action.replicas
            change = Change(w, replicas, min(counts.ready_of(w), replicas))
            return Effect((change,), cards_changed=abs(replicas - old) * w.cards_per_replica)
        case actions.PlaceReplica():
            w = _workload(state, action.workload, action)
            change = Change(w, counts.desired_of(w) + 1, counts.ready_of(w))
            return Effect((change,), cards_changed=w.cards_per_replica)
        case actions.DrainNode():
            node = _node(state, action.node, action)
            changes = []
            cards = 0
            for w, ready_there, total_there in (on_node or replicas_on(state))(node):
                cards += total_there * w.cards_per_replica
                ready = max(0, counts.ready_of(w) - ready_there)
                changes.append(Change(w, counts.desired_of(w), ready))
            return Effect(tuple(changes), cordon=node, cards_changed=cards, evicts_from=node)
        case actions.CordonNode():
            return Effect(cordon=_node(state, action.node, action))
        case actions.UncordonNode():
            return Effect(uncordon=_node(state, action.node, action))
        case actions.RotateMode():
            if state.mode(action.target_mode) is None:
                raise UnknownTarget(_unknown(action))
            up, down = mode_group_workloads(state, action.target_mode)
            changes = []
            taken = freed = 0
            for name in up:
                w = _workload(state, name, action)
                desired = max(1, counts.desired_of(w))
                taken += (desired - counts.desired_of(w)) * w.cards_per_replica
                changes.append(Change(w, desired, desired))
            for name in down:
                found = state.workload(name)
                if found is None:
                    continue  # a mode's workload that is not deployed has nothing to stop
                freed += counts.desired_of(found) * found.cards_per_replica
                changes.append(Change(found, 0, 0))
            return Effect(
                tuple(changes),
                cards_changed=max(taken, freed),
                commits_mode=action.target_mode,
            )
        case actions.NoOp():
            return Effect()
        case _:
            assert_never(action)


def expected_effect(action: Action, state: ClusterState) -> str:
    """What an action is expected to change, in one sentence a person can check afterwards
    (`steward plan` prints it next to each verdict; the decision log keeps it)."""
    match action:
        case actions.ScaleWorkload():
            return _replicas_sentence(action, state, "")
        case actions.PlaceReplica():
            return _replicas_sentence(action, state, f" on {action.node}")
        case actions.CordonNode():
            return f"{action.node} takes no new replicas; running ones stay"
        case actions.UncordonNode():
            return f"{action.node} takes new replicas again"
        case actions.DrainNode():
            moved = [w.name for w in state.workloads for r in w.placement if action.node in r.nodes]
            return f"{action.node} emptied within {action.deadline_s:g} s: {moved or 'no replicas'}"
        case actions.RotateMode():
            mode = state.mode(action.target_mode)
            if mode is None:
                return f"nothing: mode {action.target_mode} is not defined"
            return (
                f"{'+'.join(mode.nodes)} serve {', '.join(mode.workloads)}: "
                f"{mode.aggregate_peak_tok_s:g} tok/s aggregate, {mode.single_stream_tok_s:g} "
                f"tok/s single stream, context up to {mode.max_context:,}"
            )
        case actions.NoOp():
            return "nothing changes"
        case _:
            assert_never(action)


def _replicas_sentence(
    action: actions.ScaleWorkload | actions.PlaceReplica, state: ClusterState, where: str
) -> str:
    try:
        change = effect(action, state).changes[0]
    except UnknownTarget:
        return f"nothing: workload {action.workload} is not in the cluster"
    w = change.workload
    before = state.pool_cards(w.pool)
    after = before + (change.desired - w.desired_replicas) * w.cards_per_replica
    return (
        f"{w.name}: {w.desired_replicas} -> {change.desired} replica(s){where}; "
        f"pool {w.pool} cards {before} -> {after}"
    )


def _workload(state: ClusterState, name: str, action: Action) -> Workload:
    found = state.workload(name)
    if found is None:
        raise UnknownTarget(_unknown(action))
    return found


def _node(state: ClusterState, name: str, action: Action) -> str:
    if state.node(name) is None:
        raise UnknownTarget(_unknown(action))
    return name


def _unknown(action: Action) -> str:
    return f"cannot apply {action.describe()!r}: its target does not exist"
