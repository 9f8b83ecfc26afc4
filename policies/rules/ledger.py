"""The running account of a plan: the totals each action leaves, as the rules judge it.

`Ledger` is the state as changed by the plan so far, kept as overrides and pool totals so that
judging stays fast on a thousand-node state; the rules judge actions on it in a Context
(policies.rules.context). What one action changes is defined once, in tools.effects; `effect_of`
works it out on a ledger (its replica counts, the context's index of replicas per node).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from policies.rules.context import Context
from policies.rules.totals import WorkloadTotals, totals_of
from tools.actions import Action
from tools.effects import Effect, effect, node_of, workload_of
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
    def of(cls, state: ClusterState, counted: WorkloadTotals | None = None) -> Ledger:
        """The observed state, before any action; `counted` are its totals, if already taken."""
        if counted is None:
            counted = totals_of(state.workloads)
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
        grows = workload_of(action) is not None
        for change in effect.changes:
            pool = change.workload.pool
            if pool in self.diverged_cards:
                return True
            if pool in self.diverged_ready and not (
                grows and change.desired >= self.ready_of(change.workload)
            ):
                return True
        if node_of(action) in self.diverged_nodes:
            return True
        if self.diverged_nodes and effect.cordon is not None:
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


def effect_of(action: Action, ctx: Context, ledger: Ledger) -> Effect:
    """What `action` would change on top of `ledger` (its targets are known to exist)."""
    on_node = ctx.on_node
    return effect(action, ctx.state, ledger, lambda node: on_node.get(node, ()))
