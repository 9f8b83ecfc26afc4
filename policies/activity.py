"""Whether a pool is busy right now, read from fresh metrics only.

A pool is busy when one of its workloads has a queue deeper than `activity.busy_queue_depth`,
has requests or jobs running, or one of the cards its replicas use is above
`activity.busy_utilization_percent`. It is idle only when every reading it has is fresh and
none says otherwise: a stale or missing queue of a running serving workload, or a card of a
running replica without a fresh utilization, makes the answer None (unknown) — which never
counts as idle, so no pool is taken to zero on readings nobody can trust (a render job whose
cards went unread is not idle because nothing waits behind it). Render and batch workloads
have no request queue: a missing one is normal for them; a stale one is not.
"""

from __future__ import annotations

from policies.model import Policy
from tools.model import ClusterState, Derived, Metric, Node, Workload

QUEUELESS_KINDS = frozenset({"render", "batch"})
"""Kinds whose replicas work through jobs, not a request queue (a missing queue is normal)."""

_ABSENT = -1.0
_NO_CARD: tuple[float | None, float] = (_ABSENT, 0.0)


def pool_busy(state: ClusterState, pool: str, policy: Policy) -> bool | None:
    """True busy, False idle, None when the readings cannot tell (see the module docstring)."""
    limits = policy.activity
    readings = _readings(limits.busy_utilization_percent)
    seen = False
    unknown = False
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
        for replica in workload.placement:
            cards = replica.gpus
            if not cards:
                continue
            for node_name in replica.nodes:
                node = state.node(node_name)
                if node is None:
                    continue
                fresh, busy, unread_cards = readings(node)
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
    oldest = None if max_age_s is None else state.observed_at.timestamp() - max_age_s

    def note(what: str, metric: Metric) -> None:
        nonlocal count
        count += 1
        if len(named) < limit:
            status = metric.status if metric.status != "fresh" else "too old"
            named.append(f"{what} {status} ({metric.source or 'no source'})")

    def old(metric: Metric) -> bool:
        at = metric.observed_at
        return oldest is not None and at is not None and at.timestamp() < oldest

    for workload in state.pool_workloads(pool):
        if not _runs(workload):
            continue
        depth = workload.queue_depth
        if (not depth.usable or old(depth)) and _queue_expected(workload, depth):
            note(f"{workload.name} queue", depth)
        for replica in workload.placement:
            if not replica.gpus:
                continue
            for node_name in replica.nodes:
                node = state.node(node_name)
                if node is None:
                    continue
                readings = _utilization(node)
                for uuid in replica.gpus:
                    value, at = readings.get(uuid, _NO_CARD)
                    if value is None or (oldest is not None and value != _ABSENT and at < oldest):
                        if len(named) >= limit:
                            # Counted, not named: finding the card would cost a scan of the
                            # node's cards, for every one of thousands of unread cards of a
                            # fleet without a metric source.
                            count += 1
                            continue
                        card = next(g for g in node.gpus if g.uuid == uuid)
                        note(f"{node_name} card {card.index} utilization", card.utilization)
    return count, tuple(named)


def _runs(workload: Workload) -> bool:
    return workload.desired_replicas > 0 or bool(workload.placement)


def _queue_expected(workload: Workload, depth: Metric) -> bool:
    return workload.kind not in QUEUELESS_KINDS or depth.status == "stale"


Cards = tuple[frozenset[str], frozenset[str], frozenset[str]]
"""A node's cards with a fresh utilization reading, those of them above the threshold, and the
cards whose utilization is stale or missing."""


def _readings(threshold: float) -> Derived[Node, Cards]:
    """Per node, which cards read fresh, which busy and which not at all: derived once per
    version of the node (between two scrapes a node keeps its version, so a 1,000-node fleet
    reads only the nodes scraped since, however the observation was built), one table per
    threshold."""
    found = _by_threshold.get(threshold)
    if found is None:

        def cards(node: Node) -> Cards:
            fresh = [g for g in node.gpus if g.utilization.usable]
            busy = (g.uuid for g in fresh if (g.utilization.value or 0.0) > threshold)
            unread_cards = (g.uuid for g in node.gpus if not g.utilization.usable)
            return frozenset(g.uuid for g in fresh), frozenset(busy), frozenset(unread_cards)

        found = _by_threshold[threshold] = Derived(cards)
    return found


_by_threshold: dict[float, Derived[Node, Cards]] = {}


def _card_utilization(node: Node) -> dict[str, tuple[float | None, float]]:
    """Each card's utilization when fresh (None when stale or missing) and its POSIX time, for
    naming the readings that hold a pool (derived once per version of the node)."""
    return {g.uuid: _reading(g.utilization) for g in node.gpus}


def _reading(metric: Metric) -> tuple[float | None, float]:
    at = metric.observed_at.timestamp() if metric.observed_at is not None else 0.0
    return ((metric.value or 0.0) if metric.usable else None), at


_utilization = Derived(_card_utilization)
