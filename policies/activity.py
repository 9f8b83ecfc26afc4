"""Whether a pool is busy right now, read from fresh metrics only.

A pool is busy when one of its workloads has a queue deeper than `activity.busy_queue_depth`,
has requests or jobs running, or one of the cards its replicas use is above
`activity.busy_utilization_percent`. It is idle only when every reading it has is fresh and
none says otherwise: a stale or missing queue of a running serving workload, or a card of a
running replica without a fresh utilization, makes the answer None (unknown) — which never
counts as idle, so no pool is taken to zero on readings nobody can trust (a render job whose
cards went unread is not idle because nothing waits behind it). Render and batch workloads
have no request queue: a missing one is normal for them; a stale one is not.

Both passes run every tick over every replica of a fleet, so they read only the nodes the
pool's replicas run on, and stop looking where the answer can no longer change (a pool already
unknown is busy only through a busy card; a replica whose cards all read fresh has nothing to
name).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from policies.model import Policy
from tools.model import ClusterState, Metric, Node, Workload

QUEUELESS_KINDS = frozenset({"render", "batch"})
"""Kinds whose replicas work through jobs, not a request queue (a missing queue is normal)."""

_ABSENT = -1.0


def pool_busy(state: ClusterState, pool: str, policy: Policy) -> bool | None:
    """True busy, False idle, None when the readings cannot tell (see the module docstring)."""
    limits = policy.activity
    threshold = limits.busy_utilization_percent
    by_node: dict[str, Cards] = {}
    """Each node's cards, read once in this call: a node holds many replicas."""
    seen = False
    unknown = False
    # Once the answer is unknown: the nodes with a busy card, the only ones that can change it.
    busy_nodes: frozenset[str] | None = None
    for workload in state.pool_workloads(pool):
        depth = workload.queue_depth
        if depth.usable and depth.value is not None:
            seen = True
            if depth.value > limits.busy_queue_depth:
                return True
        elif _runs(workload) and _queue_expected(workload, depth):
            unknown = True
        running = workload.requests_running
        if running.usable and running.value:
            return True
        if unknown and busy_nodes is None:
            busy_nodes = _busy_nodes(state, threshold)
        if busy_nodes is not None and not busy_nodes:
            continue  # the answer is None now unless a card is busy, and none is
        for replica in workload.placement:
            cards = replica.gpus
            if not cards:
                continue
            for node_name in replica.nodes:
                if busy_nodes is not None and node_name not in busy_nodes:
                    continue  # the answer is None now unless a card is busy: none is here
                cards_here = by_node.get(node_name)
                if cards_here is None:
                    node = state.node(node_name)
                    if node is None:
                        continue
                    cards_here = by_node[node_name] = _cards(node, threshold)
                fresh, busy, unread_cards = cards_here
                if busy and not busy.isdisjoint(cards):
                    return True
                if not seen and not fresh.isdisjoint(cards):
                    seen = True
                if not unknown and unread_cards and not unread_cards.isdisjoint(cards):
                    unknown = True
    if unknown:
        return None
    return False if seen else None


def unread(
    state: ClusterState, pool: str, max_age_s: float | None = None, limit: int = 3
) -> tuple[int, tuple[str, ...]]:
    """How many readings of the pool's running workloads are stale or missing (or, with
    `max_age_s`, fresh but older than that at `state.observed_at`), and the first `limit` of them
    named with their source and reason, for the finding that holds the pool."""
    count = 0
    named: list[str] = []
    oldest = None if max_age_s is None else state.observed_at - timedelta(seconds=max_age_s)
    by_node: dict[str, CardReadings] = {}
    """Each node's card readings, read once in this call: a node holds many replicas."""

    def note(what: str, metric: Metric) -> None:
        nonlocal count
        count += 1
        if len(named) < limit:
            status = metric.status if metric.status != "fresh" else "too old"
            named.append(f"{what} {status} ({metric.source or 'no source'})")

    def old(metric: Metric) -> bool:
        at = metric.observed_at
        return oldest is not None and at is not None and at < oldest

    for workload in state.pool_workloads(pool):
        if not _runs(workload):
            continue
        depth = workload.queue_depth
        if (not depth.usable or old(depth)) and _queue_expected(workload, depth):
            note(f"{workload.name} queue", depth)
        for replica in workload.placement:
            cards = replica.gpus
            if not cards:
                continue
            for node_name in replica.nodes:
                found = by_node.get(node_name)
                if found is None:
                    here = state.node(node_name)
                    if here is None:
                        continue
                    found = by_node[node_name] = node_card_readings(here)
                unseen, fresh_since = found
                young = oldest is None or fresh_since is None or fresh_since >= oldest
                if unseen.isdisjoint(cards) and young:
                    continue  # every card of the replica here reads fresh, and young enough
                if len(named) >= limit and unseen.issuperset(cards):
                    count += len(cards)  # all unread, past the ones named: counted at once
                    continue
                node = state.node(node_name)
                assert node is not None  # the table has only the observation's nodes
                on_node = {g.uuid: g for g in node.gpus}
                for uuid in cards:
                    card = on_node.get(uuid)
                    if card is None:
                        continue  # a card of the replica on another of its nodes
                    reading = card.utilization
                    if uuid not in unseen and (
                        oldest is None
                        or reading.value == _ABSENT
                        or (reading.observed_at or EPOCH) >= oldest
                    ):
                        continue
                    if len(named) >= limit:
                        count += 1  # counted, not named
                        continue
                    note(f"{node_name} card {card.index} utilization", reading)
    return count, tuple(named)


def _runs(workload: Workload) -> bool:
    return workload.desired_replicas > 0 or bool(workload.placement)


def _queue_expected(workload: Workload, depth: Metric) -> bool:
    return workload.kind not in QUEUELESS_KINDS or depth.status == "stale"


Cards = tuple[frozenset[str], frozenset[str], frozenset[str]]
"""A node's cards with a fresh utilization reading, those of them above the threshold, and the
cards whose utilization is stale or missing."""


def _cards(node: Node, threshold: float) -> Cards:
    """Which of the node's cards read fresh, which busy (above `threshold`), which not at all."""
    fresh = [g for g in node.gpus if g.utilization.usable]
    busy = (g.uuid for g in fresh if (g.utilization.value or 0.0) > threshold)
    unread_cards = (g.uuid for g in node.gpus if not g.utilization.usable)
    return frozenset(g.uuid for g in fresh), frozenset(busy), frozenset(unread_cards)


CardReadings = tuple[frozenset[str], datetime | None]
"""A node's cards with no fresh utilization reading (stale or missing), and when the oldest
fresh one was taken (None when none is)."""

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""When a fresh reading that carries no time counts as taken: as old as can be."""
_ALL_READ: frozenset[str] = frozenset()


def node_card_readings(node: Node) -> CardReadings:
    """The node's card readings: for naming the readings that hold a pool (a replica's cards
    are checked a set at a time, one card at a time only where one is unread or too old), and
    for the loop's stale-metrics finding. Every tick reads every card of the fleet here: one
    pass, times compared as the datetimes they are (turning each into a POSIX time cost more
    than all the rest)."""
    unseen: list[str] = []
    oldest: datetime | None = None
    for g in node.gpus:
        reading = g.utilization
        if not reading.usable:
            unseen.append(g.uuid)
        elif reading.value != _ABSENT:  # -1: read as "no such card" before
            at = reading.observed_at or EPOCH
            if oldest is None or at < oldest:
                oldest = at
    return (frozenset(unseen) if unseen else _ALL_READ), oldest


def _busy_nodes(state: ClusterState, threshold: float) -> frozenset[str]:
    """The nodes with a card above `threshold`: once a pool's answer is unknown, only those can
    change it."""
    return frozenset(
        node.name
        for node in state.nodes
        if any(g.utilization.usable and (g.utilization.value or 0.0) > threshold for g in node.gpus)
    )
