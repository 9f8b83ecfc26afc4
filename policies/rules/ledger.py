"""The running account of a plan: what each action changes and the totals it leaves.

`Ledger` is the state as changed by the plan so far, kept as overrides and pool totals so that
judging stays fast on a thousand-node state; the rules judge actions on it in a Context
(policies.rules.context). `effect_of` says what one action would change against a ledger; the same
semantics, written independently against whole states, live in policies.apply.

Semantics (conservative): a scale-down keeps min(ready, replicas) ready; a drain makes every
replica placed on the node unready; a placed or scaled-up replica is not ready yet; a rotation
is judged by the state it commits to (the target mode's workloads at >= 1 ready replica, the
other modes of the node group at zero).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from policies.rules.census import Census, census
from policies.rules.context import Context
from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)
from tools.model import ClusterState, NodeFacts, Workload


class Denial(NamedTuple):
    """One rule saying no. `lower`/`upper` bound the replica count a scale could have had;
    `retry_at` is when this rule would allow the action again, where it knows (a cooldown's
    end, the next slot of the hourly budget)."""

    rule_id: str
    message: str
    lower: int | None = None
    upper: int | None = None
    retry_at: datetime | None = None


class Change(NamedTuple):
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


@dataclass
class Ledger:
    """The state as the plan so far leaves it (overrides over the observed state)."""

    state: ClusterState
    desired: dict[str, int] = field(default_factory=dict)
    ready: dict[str, int] = field(default_factory=dict)
    pool_cards: dict[str, int] = field(default_factory=dict)
    pool_ready: dict[str, int] = field(default_factory=dict)
    total_cards: int = 0
    cordoned: set[str] = field(default_factory=set)
    uncordoned: set[str] = field(default_factory=set)
    keys: dict[str, int] = field(default_factory=dict)
    """Action key -> the plan position that changed it."""
    pool_actions: dict[str, list[int]] = field(default_factory=dict)
    actions: int = 0
    cards_changed: int = 0
    diverged_cards: set[str] = field(default_factory=set)
    diverged_ready: set[str] = field(default_factory=set)
    diverged_nodes: set[str] = field(default_factory=set)
    """Pools whose cards or ready replicas, and nodes whose schedulability, actions waiting for
    approval changed here and not in the committed ledger."""

    @classmethod
    def of(cls, state: ClusterState, counted: Census | None = None) -> Ledger:
        """The observed state, before any action; `counted` is its census, if already taken."""
        if counted is None:
            counted = census(state.workloads)
        return cls(
            state=state,
            pool_cards=dict(counted.pool_cards),
            pool_ready=dict(counted.pool_ready),
            total_cards=counted.total_cards,
        )

    def fork(self) -> Ledger:
        return Ledger(
            state=self.state,
            desired=dict(self.desired),
            ready=dict(self.ready),
            pool_cards=dict(self.pool_cards),
            pool_ready=dict(self.pool_ready),
            total_cards=self.total_cards,
            cordoned=set(self.cordoned),
            uncordoned=set(self.uncordoned),
            keys=dict(self.keys),
            pool_actions={k: list(v) for k, v in self.pool_actions.items()},
            actions=self.actions,
            cards_changed=self.cards_changed,
            diverged_cards=set(self.diverged_cards),
            diverged_ready=set(self.diverged_ready),
            diverged_nodes=set(self.diverged_nodes),
        )

    def desired_of(self, w: Workload) -> int:
        return self.desired.get(w.name, w.desired_replicas)

    def ready_of(self, w: Workload) -> int:
        return self.ready.get(w.name, w.ready_replicas)

    def schedulable(self, node: str, facts: NodeFacts | None = None) -> bool:
        """Takes work after the plan so far; `facts`: the node's, if the caller has them."""
        if facts is None:
            facts = self.state.node_facts(node)
        if facts is None or node in self.cordoned:
            return False
        if node in self.uncordoned:
            return facts.ready
        return facts.schedulable

    def diverges_for(self, action: Action, effect: Effect, committed: Ledger) -> bool:
        """Whether this (pending) ledger may judge `action` differently from `committed`.

        It may when the action touches a pool whose cards an action waiting for approval
        changed, may lower ready replicas in a pool whose readiness one changed, names a node
        whose schedulability one changed (or takes a node while one changed any), or adds
        cards while this ledger holds more cards in all (with fewer, the committed ledger's
        total-budget check is the stricter one).
        """
        if not (self.diverged_cards or self.diverged_ready or self.diverged_nodes):
            return False
        grows = type(action) is PlaceReplica or type(action) is ScaleWorkload
        for change in effect.changes:
            pool = change.workload.pool
            if pool in self.diverged_cards:
                return True
            if pool in self.diverged_ready and not (
                grows and change.desired >= self.ready_of(change.workload)
            ):
                return True
        if _node_of(action) in self.diverged_nodes:
            return True
        if self.diverged_nodes and (type(action) is CordonNode or type(action) is DrainNode):
            return True  # the last schedulable node of a pool or mode counts every node

        return self.total_cards > committed.total_cards and any(
            c.desired > committed.desired_of(c.workload) for c in effect.changes
        )

    def commit(self, index: int, key: str, effect: Effect, diverge: bool = False) -> None:
        """Count one action of the plan (allowed, or waiting for approval) into the totals.

        `diverge`: the action waits for approval and counts in this ledger only.
        """
        if diverge:
            for change in effect.changes:
                w = change.workload
                if change.desired != self.desired_of(w):
                    self.diverged_cards.add(w.pool)
                if change.ready != self.ready_of(w):
                    self.diverged_ready.add(w.pool)
            self.diverged_nodes.update(n for n in (effect.cordon, effect.uncordon) if n)
        for change in effect.changes:
            w = change.workload
            cards = (change.desired - self.desired_of(w)) * w.cards_per_replica
            self.pool_cards[w.pool] = self.pool_cards.get(w.pool, 0) + cards
            self.total_cards += cards
            ready = change.ready - self.ready_of(w)
            self.pool_ready[w.pool] = self.pool_ready.get(w.pool, 0) + ready
            self.desired[w.name] = change.desired
            self.ready[w.name] = change.ready
            self.pool_actions.setdefault(w.pool, []).append(index)
        if effect.cordon:
            self.cordoned.add(effect.cordon)
            self.uncordoned.discard(effect.cordon)
        if effect.uncordon:
            self.uncordoned.add(effect.uncordon)
            self.cordoned.discard(effect.uncordon)
        if key:
            self.keys[key] = index
            self.actions += 1
        self.cards_changed += effect.cards_changed


def _node_of(action: Action) -> str | None:
    """The node an action names, if any (without pydantic's slow miss on a missing attribute)."""
    if type(action) is PlaceReplica or type(action) is DrainNode:
        return action.node
    if type(action) is CordonNode or type(action) is UncordonNode:
        return action.node
    return None


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


def effect_of(action: Action, ctx: Context, ledger: Ledger) -> Effect:
    """What `action` would change on top of `ledger` (targets are known to exist)."""
    state = ctx.state
    if type(action) is ScaleWorkload or type(action) is PlaceReplica:
        # The hot path, for nearly every action of a plan: each field read once (a pydantic
        # field costs ~150 ns a read), the ledger's overrides looked up in place.
        w = _workload(state, action.workload)
        name = w.name
        old = ledger.desired.get(name, w.desired_replicas)
        ready = ledger.ready.get(name, w.ready_replicas)
        if type(action) is PlaceReplica:
            return Effect((Change(w, old + 1, ready),), None, None, w.cards_per_replica)
        assert isinstance(action, ScaleWorkload)
        replicas = action.replicas
        change = Change(w, replicas, min(ready, replicas))
        return Effect((change,), None, None, abs(replicas - old) * w.cards_per_replica)
    if type(action) is DrainNode:
        changes = []
        cards = 0
        for w, ready_there, total_there in ctx.on_node.get(action.node, []):
            cards += total_there * w.cards_per_replica
            ready = max(0, ledger.ready_of(w) - ready_there)
            changes.append(Change(w, ledger.desired_of(w), ready))
        return Effect(tuple(changes), cordon=action.node, cards_changed=cards)
    if type(action) is CordonNode:
        return Effect(cordon=action.node)
    if type(action) is UncordonNode:
        return Effect(uncordon=action.node)
    if type(action) is RotateMode:
        up, down = mode_group_workloads(state, action.target_mode)
        changes = []
        taken = freed = 0
        for name in up:
            w = _workload(state, name)
            desired = max(1, ledger.desired_of(w))
            taken += (desired - ledger.desired_of(w)) * w.cards_per_replica
            changes.append(Change(w, desired, desired))
        for name in down:
            found = state.workload(name)
            if found is None:
                continue  # a mode's workload that is not deployed has nothing to stop
            w = found
            freed += ledger.desired_of(w) * w.cards_per_replica
            changes.append(Change(w, 0, 0))
        return Effect(tuple(changes), cards_changed=max(taken, freed))
    return Effect()


def _workload(state: ClusterState, name: str) -> Workload:
    w = state.workload(name)
    assert w is not None, f"workload {name} was checked to exist"
    return w
