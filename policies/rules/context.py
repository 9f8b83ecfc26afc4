"""What one judgement reads: `Context` — the observed state, the policy, the history, the time.

Pure data: no clock, no I/O. What the rules read of the policy for every action (pool limits,
budgets, protected workloads, SLO breaches, cooldowns) is worked out once per judgement here,
as plain values: every attribute read on a pydantic model goes through BaseModel's __getattr__
hook (~150 ns against ~17 ns for a plain object), and a plan of 100 actions reads each of them
a hundred times. So is what the rules read of the observed workloads as a whole (their totals).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import NamedTuple

from policies.history import History
from policies.model import ApprovalRule, Policy, QuietWindow
from policies.rules.totals import WorkloadTotals, on_nodes, pools_placed, totals_of
from tools.model import ClusterState, Workload

HOUR = timedelta(hours=1)


class Limits(NamedTuple):
    """One pool's limits as the pool rules read them (policies.model.PoolPolicy)."""

    min_cards: int
    max_cards: int
    min_ready_replicas: int
    idle_before_zero: timedelta | None


def holds(ctx: Context, pool: str, node: str) -> bool:
    """Whether `node` is one of the nodes a pool that keeps a minimum may run on: those carrying
    a card model it names, and those its replicas run on."""
    models = ctx.pools_kept[pool]
    if models and ctx.state.carries(node, models):
        return True
    return node in ctx.pools_placed.get(pool, ())


def nodes_of(ctx: Context, pool: str) -> Iterator[str]:
    """The pool's nodes (see `holds`), found as they are asked for: a rule that wants one other
    than its own mostly stops at the first (a node may come twice)."""
    models = ctx.pools_kept[pool]
    if models:
        yield from ctx.state.nodes_with_model(models)
    yield from ctx.pools_placed.get(pool, ())


@dataclass
class Context:
    """What one judgement reads. Pure data: no clock, no I/O.

    `nodes_of_interest` are the nodes the plan drains: only their replicas are indexed.
    `proposed_by_model`: the plan is a language model's.
    """

    state: ClusterState
    policy: Policy
    history: History
    now: datetime
    nodes_of_interest: frozenset[str] = frozenset()
    proposed_by_model: bool = False
    """The plan judged is a language model's (approval rules with `proposed_by: model`)."""

    @cached_property
    def limits(self) -> dict[str, Limits]:
        """pool -> its limits, read once per judgement (a policy field costs ~150 ns a read,
        as every pydantic model's does, and the pool rules read four for every action)."""
        return {
            name: Limits(p.min_cards, p.max_cards, p.min_ready_replicas, p.idle_before_zero)
            for name, p in self.policy.pools.items()
        }

    @cached_property
    def total_cards(self) -> int | None:
        """The total card budget (budget.total_cards), read once per judgement."""
        return self.policy.budget.total_cards

    @cached_property
    def local(self) -> datetime:
        return self.policy.local(self.now)

    @cached_property
    def totals(self) -> WorkloadTotals:
        return totals_of(self.state.workloads)

    @cached_property
    def on_node(self) -> dict[str, list[tuple[Workload, int, int]]]:
        """node of interest -> (workload, ready replicas there, replicas there)."""
        workloads = self.state.workloads
        placed = on_nodes(workloads, self.nodes_of_interest)
        out: dict[str, list[tuple[Workload, int, int]]] = {}
        for node in self.nodes_of_interest:
            tallies = placed.get(node)
            if tallies:
                out[node] = [(workloads[i], ready, there) for i, ready, there in tallies]
        return out

    @cached_property
    def pools_kept(self) -> dict[str, frozenset[str]]:
        """pool that keeps a minimum -> the card models it names (read only for cordons and
        drains; see `holds`)."""
        return {
            name: frozenset(p.gpu_models)
            for name, p in self.policy.pools.items()
            if p.min_cards or p.min_ready_replicas
        }

    @cached_property
    def pools_placed(self) -> dict[str, set[str]]:
        """pool that keeps a minimum -> the nodes its replicas run on (pools with a replica)."""
        return pools_placed(self.state.workloads, self.pools_kept)

    @cached_property
    def active_windows(self) -> list[QuietWindow]:
        """The quiet windows that contain `now`."""
        return [w for w in self.policy.windows if w.contains(self.local)]

    @cached_property
    def active_approvals(self) -> dict[str, list[ApprovalRule]]:
        """Action type -> the approval rules in force at `now` for it (their window contains
        `now`, or they have none)."""
        out: dict[str, list[ApprovalRule]] = {}
        for rule in self.policy.approvals:
            if rule.window is None or rule.window.contains(self.local):
                for action_type in rule.actions:
                    out.setdefault(action_type, []).append(rule)
        return out

    @cached_property
    def done_last_hour(self) -> int:
        """Executed actions in the hour before `now` (the hourly change budget's count)."""
        return self.history.count_since(self.now - HOUR)

    @cached_property
    def cooldown_by_type(self) -> dict[str, timedelta]:
        return {str(t): d for t, d in self.policy.cooldowns.by_action.items()}

    @cached_property
    def cooldown_by_target(self) -> dict[str, timedelta]:
        return self.policy.cooldowns.by_target

    @cached_property
    def protected(self) -> frozenset[str]:
        """The protected workloads, as a set once per judgement."""
        return frozenset(self.policy.protected)

    @cached_property
    def slo_breaching(self) -> dict[str, tuple[float, float]]:
        """pool -> (its worst fresh queue wait, its SLO target) for the pools whose worst wait
        is above their target: the only ones the SLO guard stops scaling down."""
        worst = self.worst_queue_wait
        out = {}
        for pool, target in self.policy.slo.items():
            wait = worst.get(pool)
            limit = target.queue_wait_s
            if wait is not None and limit is not None and wait > limit:
                out[pool] = wait, limit
        return out

    @cached_property
    def change_budget(self) -> tuple[int | None, int | None]:
        """(actions_per_hour, cards_per_tick) of the policy's change budget."""
        budget = self.policy.change_budget
        return budget.actions_per_hour, budget.cards_per_tick

    @property
    def worst_queue_wait(self) -> dict[str, float]:
        """pool -> the highest fresh queue wait among its workloads (pools with one only)."""
        return self.totals.worst_queue_wait
