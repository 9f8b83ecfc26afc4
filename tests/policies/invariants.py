"""What must hold after any plan the engine lets through, checked on whole applied states.

Written against `policies.apply` and the policy's own fields — not against the engine's ledger —
so that a rule the engine forgets or miscounts shows up here. Limits are "never worse": a pool
already past a limit may not be taken further past it.

A busy pool may shrink (before its idle time, or while breaching its SLO) only as a preemption:
later in the same let-through plan, pools of a strictly higher priority with fresh queued demand
grow by at least the cards it frees. Every other invariant holds for preemptions too.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from policies.activity import pool_busy
from policies.apply import apply_action, cards_changed
from policies.history import History
from policies.model import Policy
from policies.rules.modes import spans_nodes
from tools.actions import Action, DrainNode, NoOp, PlaceReplica, RotateMode, ScaleWorkload
from tools.effects import action_key, direction
from tools.model import ClusterState


def pool_totals(state: ClusterState) -> tuple[dict[str, int], dict[str, int], int]:
    cards: dict[str, int] = {}
    ready: dict[str, int] = {}
    for w in state.workloads:
        cards[w.pool] = cards.get(w.pool, 0) + w.cards
        ready[w.pool] = ready.get(w.pool, 0) + w.ready_replicas
    return cards, ready, sum(cards.values())


def check_applied(
    actions: list[Action],
    state: ClusterState,
    policy: Policy,
    history: History,
    now: datetime,
) -> list[str]:
    """Every invariant a let-through sequence of actions broke, as sentences (empty: none)."""
    broken: list[str] = []
    before_cards, before_ready, before_total = pool_totals(state)
    after = state
    spent = 0
    keys: set[str] = set()
    counted = 0
    excused = preemptions(actions, state, policy)
    excused_pools = {_pool_of(actions[i], state) for i in excused}
    for position, action in enumerate(actions):
        if isinstance(action, NoOp):
            continue
        counted += 1
        key = action_key(action)
        if key in keys:
            broken.append(f"two actions on {key} in one plan")
        keys.add(key)
        broken += _cooldowns(action, key, policy, history, now)
        broken += _preconditions(action, after, state, policy, now, preempts=position in excused)
        spent += cards_changed(action, after)
        after = apply_action(action, after)
    broken += _nodes_kept(state, after, policy)
    cards, ready, total = pool_totals(after)
    for name, limits in policy.pools.items():
        was, now_cards = before_cards.get(name, 0), cards.get(name, 0)
        if now_cards > max(limits.max_cards, was):
            broken.append(f"pool {name}: {now_cards} cards > max {limits.max_cards} (was {was})")
        if now_cards < min(limits.min_cards, was):
            broken.append(f"pool {name}: {now_cards} cards < min {limits.min_cards} (was {was})")
        had, has = before_ready.get(name, 0), ready.get(name, 0)
        if has < min(limits.min_ready_replicas, had):
            broken.append(f"serving pool {name}: {has} ready < {limits.min_ready_replicas}")
        if (
            limits.idle_before_zero is not None
            and now_cards == 0 < was
            and (name not in excused_pools)
        ):
            since = history.idle_since(name)
            idle = pool_busy(state, name, policy) is False
            if not idle or since is None or now - since < limits.idle_before_zero:
                broken.append(f"pool {name} went to zero without {limits.idle_before_zero} idle")
    budget = policy.budget.total_cards
    if budget is not None and total > max(budget, before_total):
        broken.append(f"total {total} cards > budget {budget} (was {before_total})")
    for name in policy.protected:
        old, new = state.workload(name), after.workload(name)
        if old is not None and new is not None and new.desired_replicas < old.desired_replicas:
            broken.append(f"protected {name} scaled down")
    radius = policy.change_budget.cards_per_tick
    if radius is not None and spent > radius:
        broken.append(f"{spent} cards changed > blast radius {radius}")
    limit = policy.change_budget.actions_per_hour
    if (
        limit is not None
        and counted
        and history.count_since(now - timedelta(hours=1)) + counted > limit
    ):
        broken.append(f"more than {limit} actions in an hour")
    return broken


def _nodes_kept(before: ClusterState, after: ClusterState, policy: Policy) -> list[str]:
    """A pool that keeps a minimum, and every mode, keep one schedulable node if they had one.

    A pool's nodes: where its replicas run, and the nodes with a card model it names."""
    groups: dict[str, set[str]] = {}
    for name, limits in policy.pools.items():
        if limits.min_cards or limits.min_ready_replicas:
            groups[f"pool {name}"] = {
                n.name for n in before.nodes if any(g.model in limits.gpu_models for g in n.gpus)
            } | {
                node
                for w in before.workloads
                if w.pool == name
                for r in w.placement
                for node in r.nodes
            }
    for mode in before.modes:
        groups[f"mode {mode.name}"] = set(mode.nodes)
    broken = []
    for what, names in groups.items():
        had = [n for n in names if (node := before.node(n)) is not None and node.schedulable]
        has = [n for n in names if (node := after.node(n)) is not None and node.schedulable]
        if had and not has:
            broken.append(f"{what}: its last schedulable node(s) {sorted(had)} taken")
    return broken


def preemptions(actions: list[Action], state: ClusterState, policy: Policy) -> set[int]:
    """Positions of scale-downs that later growth of higher-priority pools with fresh queued
    demand covers card for card."""
    out: set[int] = set()
    for i, action in enumerate(actions):
        if not isinstance(action, ScaleWorkload):
            continue
        lender = state.workload(action.workload)
        if lender is None or lender.pool not in policy.pools:
            continue
        freed = (lender.desired_replicas - action.replicas) * lender.cards_per_replica
        if freed <= 0:
            continue
        mine = policy.pools[lender.pool].priority
        gained = 0
        for later in actions[i + 1 :]:
            if not isinstance(later, ScaleWorkload | PlaceReplica):
                continue
            taker = state.workload(later.workload)
            if taker is None or taker.pool not in policy.pools:
                continue
            depth = taker.queue_depth
            queued = depth.usable and (depth.value or 0) > 0
            if not queued or policy.pools[taker.pool].priority <= mine:
                continue
            grow = 1 if isinstance(later, PlaceReplica) else later.replicas - taker.desired_replicas
            gained += max(0, grow) * taker.cards_per_replica
        if gained >= freed:
            out.add(i)
    return out


def _pool_of(action: Action, state: ClusterState) -> str | None:
    workload = state.workload(action.target)
    return workload.pool if workload is not None else None


def _cooldowns(
    action: Action, key: str, policy: Policy, history: History, now: datetime
) -> list[str]:
    broken = []
    for entry in history.executed:
        if entry.key != key:
            continue
        age = now - entry.at
        by_type = dict(policy.cooldowns.by_action).get(action.type)  # type: ignore[arg-type]
        if by_type and entry.action.type == action.type and age < by_type:
            broken.append(f"{action.type} on {key} within its cooldown")
        by_target = policy.cooldowns.by_target.get(action.target)
        if by_target and age < by_target:
            broken.append(f"{key} acted on within its target cooldown")
    return broken


def _preconditions(
    action: Action,
    current: ClusterState,
    observed: ClusterState,
    policy: Policy,
    now: datetime,
    *,
    preempts: bool = False,
) -> list[str]:
    """Rules about the single action: protection, windows, placement, SLO (which a preemption
    may pass), rotation."""
    broken = []
    local = policy.local(now)
    for window in policy.windows:
        if window.contains(local) and (
            window.allow == "nothing" or direction(action, observed) != "up"
        ):
            broken.append(f"{action.describe()} inside window {window.name}")
    if isinstance(action, DrainNode):
        for w in observed.workloads:
            if w.name in policy.protected and any(action.node in p.nodes for p in w.placement):
                broken.append(f"drained {action.node} holding protected {w.name}")
    if isinstance(action, PlaceReplica):
        node = current.node(action.node)
        workload = current.workload(action.workload)
        assert node is not None and workload is not None
        if not node.schedulable:
            broken.append(f"placed on unschedulable {node.name}")
        allowed = policy.pools[workload.pool].gpu_models
        if allowed and not any(g.model in allowed for g in node.gpus):
            broken.append(f"placed {workload.name} on {node.name} without an allowed card")
    if isinstance(action, ScaleWorkload):
        workload = current.workload(action.workload)
        assert workload is not None
        slo = policy.slo.get(workload.pool)
        waits = [
            w.queue_wait_s.value
            for w in observed.pool_workloads(workload.pool)
            if w.queue_wait_s.usable and w.queue_wait_s.value is not None
        ]
        if (
            slo
            and not preempts
            and action.replicas < workload.desired_replicas
            and max(waits, default=0) > (slo.queue_wait_s)
        ):
            broken.append(f"scaled {workload.name} down while its pool breaches its SLO")
    if isinstance(action, RotateMode):
        broken += _rotation(action, observed, policy, now)
    return broken


def _rotation(action: RotateMode, state: ClusterState, policy: Policy, now: datetime) -> list[str]:
    broken = []
    mode = state.mode(action.target_mode)
    assert mode is not None
    active = state.active_mode
    if active is not None and active.name == mode.name:
        broken.append("rotated to the active mode")
    if active is not None and now - active.since < policy.rotation.min_dwell:
        broken.append("rotated before the minimum dwell")
    if spans_nodes(mode, state):
        for link in state.links:
            if not set(link.nodes) <= set(mode.nodes):
                continue
            expected = policy.rotation.expected_gid_index
            expected = link.configured_gid_index if expected is None else expected
            for path in link.paths:
                fraction = path.fraction_of_nominal()
                if fraction is None or fraction < policy.rotation.min_link_fraction:
                    broken.append(f"rotated over a slow or unmeasured path {path.name}")
                gid = path.gid_index
                if expected is not None and not (gid.usable and gid.value == expected):
                    broken.append(f"rotated with a wrong GID index on {path.name}")
    return broken
