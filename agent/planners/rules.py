"""The rules planner: deterministic, the default, and the fallback of every other planner.

What it does, in order of pool priority (highest first):
- a workload with queued requests and no replica gets one (back from zero on the first request);
- a workload whose queue wait reaches its SLO (or whose queue per replica is long) gets the
  replicas the queue asks for (agent.planners.sizing: one is placed on the node that ranks
  first, several are asked of the scheduler), unless replicas are still loading on ready nodes
  (no piling up during a model load; a replica that cannot start does not hold growth back);
- a workload idle for its pool's idle time goes to zero (when the pool's minimum allows);
- a workload whose queue stayed calm for `calm_s` gives one replica back (the hysteresis: up at
  the SLO, down only well below it and only after a while, so it never flaps), unless the
  survivors could not absorb what it serves (sizing.absorbs);
- a new replica goes where placement (`pick_node`) ranks first; when no node has room, replicas of
  lower-priority pools on one eligible node are scaled down (counting the cards already free or
  being freed there), followed in the same plan by a scale-up of the workload that needs them —
  the pair the policy judges as a preemption (pool.priority_preemption). This is how the render
  pool's cards are lent to inference while nobody renders, and taken back when renders queue;
- a workload does not grow onto nodes where a higher-priority workload is still waiting for
  cards to be freed, and a workload the plan already scales is not touched again; placements
  later in a plan see the cards the plan's earlier ones took, and a plan changes no more cards
  than the policy's `change_budget.cards_per_tick`;
- when demand has favoured the other serving mode for long enough, and the switch pays for its
  downtime (tools.modes.rotation_gain, the seeds' rule), a `RotateMode` is proposed.
Workloads whose demand metrics are stale or missing are held as they are: never scaled down on a
reading nobody can trust; nor is anything of a pool assess holds (`Signals.held_pools`: stale or
missing readings of its running workloads, a render job's cards included) scaled down, not even
to lend its cards to a higher-priority pool. Workloads that belong to a serving mode change only
by rotation.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.planners import sizing
from agent.planners.plan_cards import PlanCards
from agent.planners.rule_settings import RulesSettings
from agent.signals.assess import is_hot, zero_due
from agent.signals.model import Signals, WorkloadSignals
from tools.actions import (
    Action,
    PlaceReplica,
    Plan,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
    joined_notes,
)
from tools.labels import matches
from tools.model import ClusterState, Workload
from tools.modes import demand_from_state, rotation_gain
from tools.placement import node_capacity, pick_node, pick_nodes, room_behind_cordons


class RulesPlanner:
    """Deterministic planning from signals; see the module docstring for the rules."""

    name = "rules"

    def __init__(self, settings: RulesSettings | None = None) -> None:
        self.settings = settings or RulesSettings()
        self._held: frozenset[str] = frozenset()
        self._lifting: set[str] = set()
        """Nodes this plan already uncordons."""

    def plan(self, state: ClusterState, signals: Signals) -> Plan:
        actions: list[Action] = []
        notes: list[str] = []
        cards = PlanCards(state)
        self._held = frozenset(signals.held_pools)
        self._lifting = set()
        notes.extend(
            f"pool {p}: readings stale or missing, nothing scaled down" for p in self._held
        )
        in_modes = {w for mode in state.modes for w in mode.workloads}
        ordered = sorted(
            (s for s in signals.workloads if s.workload not in in_modes),
            key=lambda s: (-self.settings.pool(s.pool).priority, s.workload),
        )
        touched: set[str] = set()
        """Workloads an action of this plan already scales or places."""
        for signal in ordered:
            workload = state.workload(signal.workload)
            if workload is None or signal.workload in touched:
                continue  # a workload a higher-priority pool already scaled down is left alone
            if signal.stale:
                notes.append(f"{signal.workload}: demand metrics stale or missing, held")
                continue
            found = self._one(workload, signal, state, cards, notes)
            actions.extend(found)
            touched.update(a.workload for a in found if isinstance(a, ScaleWorkload | PlaceReplica))
        if signals.favoured_mode and signals.favoured_mode != signals.active_mode:
            advice = rotation_gain(state, demand_from_state(state), self.settings.advice)
            if advice.rotate and advice.target == signals.favoured_mode:
                actions.append(
                    RotateMode(
                        target_mode=signals.favoured_mode,
                        reason=f"demand has favoured {signals.favoured_mode} over "
                        f"{signals.active_mode} for {self.settings.assess.mode_dwell_s:g} s or "
                        f"more: {signals.favoured_because}; {advice.reason}",
                    )
                )
            else:
                notes.append(f"rotation to {signals.favoured_mode} held: {advice.reason}")
        rationale = joined_notes(notes) if notes else ""
        if not actions and not rationale:
            rationale = "nothing to change"
        return Plan(actions=tuple(actions), rationale=rationale, planner=self.name)

    def _one(
        self,
        workload: Workload,
        signal: WorkloadSignals,
        state: ClusterState,
        cards: PlanCards,
        notes: list[str],
    ) -> list[Action]:
        settings = self.settings.assess
        stuck = _stuck(workload, state, settings.pending_release_s)
        if stuck:
            waited = max(stuck)
            return [
                ScaleWorkload(
                    workload=workload.name,
                    replicas=workload.desired_replicas - len(stuck),
                    reason=f"{len(stuck)} replica(s) found no node to run on for {waited:.0f} s "
                    f"(released after {settings.pending_release_s:g} s): given back rather "
                    "than left pending",
                )
            ]
        queued = signal.queue_depth is not None
        depth = signal.queue_depth or 0.0
        if queued and workload.desired_replicas == 0 and depth > 0:
            what = "render job(s)" if workload.kind == "render" else "request(s)"
            why = f"{depth:g} {what} queued and no replica: back from zero"
            count = sizing.wanted(workload, signal, settings)
            if signal.slo is not None:
                count = max(1, signal.slo.need)
                why = f"{why}; {signal.slo.words}"
            return self._grow(workload, state, cards, why, notes, count=count)
        if signal.slo is not None:
            return self._to_slo(workload, signal, state, cards, notes)
        if queued and workload.desired_replicas > 0 and is_hot(signal, settings):
            if sizing.starting(workload, state):
                notes.append(f"{workload.name}: replicas still starting, waiting for them")
                return []
            why = (
                f"queue {depth:g}, wait {signal.queue_wait_s or 0:.1f} s against an SLO of "
                f"{signal.slo_wait_s:g} s"
            )
            count = sizing.wanted(workload, signal, settings)
            return self._grow(workload, state, cards, why, notes, count=count)
        pool = self.settings.pool(workload.pool)
        idle_after = settings.idle_to_zero_s.get(workload.pool)
        if (
            workload.desired_replicas > 0
            and idle_after is not None
            and pool.min_cards == 0
            and signal.idle_for_s is not None
            and signal.idle_for_s >= idle_after
        ):
            cards.release(workload.pool, workload.cards)
            return [
                ScaleWorkload(
                    workload=workload.name,
                    replicas=0,
                    reason=f"idle for {signal.idle_for_s:.0f} s (pool {workload.pool} goes to "
                    f"zero after {idle_after:g} s)",
                )
            ]
        if (
            workload.desired_replicas > 1
            and signal.calm_for_s is not None
            and signal.calm_for_s >= settings.calm_s
            and cards.pool(workload.pool) - workload.cards_per_replica >= pool.min_cards
        ):
            absorbed, figures = sizing.absorbs(workload)
            if not absorbed:
                notes.append(f"{workload.name}: calm, but kept: {figures}")
                return []
            cards.release(workload.pool, workload.cards_per_replica)
            return [
                ScaleWorkload(
                    workload=workload.name,
                    replicas=workload.desired_replicas - 1,
                    reason=f"queue calm for {signal.calm_for_s:.0f} s: one replica given back",
                )
            ]
        return []

    def _to_slo(
        self,
        workload: Workload,
        signal: WorkloadSignals,
        state: ClusterState,
        cards: PlanCards,
        notes: list[str],
    ) -> list[Action]:
        """A profiled workload sized by the capacity model (agent.signals.slo): grown to
        what the forecast and the reactive layer ask (replicas loading count, so nothing is
        asked twice, and nothing waits for them), given back one replica or more once the rest
        have covered the forecast for the keep time, to zero after a long enough quiet."""
        view = signal.slo
        assert view is not None
        desired = workload.desired_replicas
        if view.need > desired:
            if view.reactive:
                why = f"reactive: {view.reactive}; {view.words}"
            else:
                why = f"sized to the SLO: {view.words}"
            return self._grow(workload, state, cards, why, notes, count=view.need - desired)
        if workload.pool in self._held:
            return []
        pool = self.settings.pool(workload.pool)
        if zero_due(signal, self.settings.assess) and pool.min_cards == 0:
            cards.release(workload.pool, workload.cards)
            return [
                ScaleWorkload(
                    workload=workload.name,
                    replicas=0,
                    reason=f"no arrival for {view.quiet_for_s or 0:.0f} s, longer than the keep "
                    f"time ({view.keep_s:.0f} s) and the usual idle gap (zero after "
                    f"{view.zero_after_s:.0f} s)",
                )
            ]
        keep = view.release_to
        if keep is None or keep >= desired:
            return []
        per = workload.cards_per_replica
        floor = -(
            -max(0, pool.min_cards - (cards.pool(workload.pool) - workload.cards)) // max(per, 1)
        )
        keep = max(keep, floor, 1)
        if keep >= desired:
            return []
        cards.release(workload.pool, (desired - keep) * per)
        return [
            ScaleWorkload(
                workload=workload.name,
                replicas=keep,
                reason=f"{keep} replica(s) have covered the forecast for the keep time "
                f"({view.keep_s:.0f} s, the cost of a reload): {view.words}",
            )
        ]

    def _grow(
        self,
        workload: Workload,
        state: ClusterState,
        cards: PlanCards,
        why: str,
        notes: list[str],
        *,
        count: int = 1,
    ) -> list[Action]:
        pool = self.settings.pool(workload.pool)
        need = max(workload.cards_per_replica, 1)
        if pool.max_cards is not None:
            count = min(count, (pool.max_cards - cards.pool(workload.pool)) // need)
        if count <= 0:
            notes.append(f"{workload.name}: pool {workload.pool} is at its maximum of cards")
            return []
        gated = self.settings.placements_gated
        if workload.pool in gated or "*" in gated:
            count = 1  # the policy asks a human for each placement: one at a time
        radius = self.settings.cards_per_tick
        if radius is not None and workload.cards_per_replica:
            count = min(count, max(0, radius - cards.changed) // workload.cards_per_replica)
            if count <= 0:
                notes.append(f"{workload.name}: this plan already changes {radius} card(s)")
                return []
        waiting = self._waiting_above(workload, state, cards)
        if waiting is not None:
            notes.append(f"{workload.name}: {waiting} waits for cards there first (priority)")
            return []
        # Picked on the plan's own view: the cards its earlier placements took are taken.
        view = cards.view
        mine = view.workload(workload.name) or workload
        many = count > 1
        candidates = pick_nodes(mine, view, count) if many else pick_node(mine, view, limit=1)
        if candidates:
            cards.take(workload.pool, need * len(candidates))
            cards.claim(mine, candidates)
            if len(candidates) == 1:
                best = candidates[0]
                return [
                    PlaceReplica(
                        workload=workload.name,
                        node=best.node,
                        gpus=best.gpus,
                        reason=f"{why}; {best.node} ranks first: {'; '.join(best.reasons[:2])}",
                    )
                ]
            where = ", ".join(sorted({c.node for c in candidates}))
            return [
                ScaleWorkload(
                    workload=workload.name,
                    replicas=workload.desired_replicas + len(candidates),
                    reason=f"{why}: {len(candidates)} more replica(s), room on {where}",
                )
            ]
        lent = self._reclaim(workload, state, cards, need)
        if lent is None:
            return self._behind_cordon(workload, state, why, notes)
        scale_downs, node = lent
        cards.take(workload.pool, need)
        # A scale, not a placement: the cards free when the lent replicas have exited, and the
        # new replica waits for them (pending) wherever the pool's selector allows.
        return [
            *scale_downs,
            ScaleWorkload(
                workload=workload.name,
                replicas=workload.desired_replicas + 1,
                reason=f"{why}; cards on {node} taken back from lower-priority pools; "
                + self._eta(workload, state, scale_downs),
            ),
        ]

    def _behind_cordon(
        self, workload: Workload, state: ClusterState, why: str, notes: list[str]
    ) -> list[Action]:
        """No node has room: lift a cordon of Steward's own that holds room back (the next tick
        places there), or say which node a person's cordon holds back (only a person lifts it;
        the loop reports it as the finding cordoned_capacity)."""
        behind = (
            room_behind_cordons(workload, state) if any(n.cordoned for n in state.nodes) else []
        )
        if not behind:
            notes.append(f"{workload.name}: no node has room and nothing lower-priority to take")
            return []
        node = behind[0]
        if node.cordoned_by_steward:
            if node.name in self._lifting:
                return []  # an earlier workload's uncordon of this plan frees it for this one too
            self._lifting.add(node.name)
            return [
                UncordonNode(
                    node=node.name,
                    reason=f"{why}; no node has room but {node.name}, which Steward cordoned: "
                    "its cordon lifted for the capacity",
                )
            ]
        names = ", ".join(n.name for n in behind)
        notes.append(
            f"{workload.name}: no node has room; {names} would, but is cordoned by someone "
            "other than Steward (lifting that cordon needs a person)"
        )
        return []

    def _eta(self, workload: Workload, state: ClusterState, lenders: list[Action]) -> str:
        """An honest ETA for a workload waiting on lent cards: the lenders' replicas stop
        admitting and finish what they serve (up to the drain deadline), exit, then it loads."""
        in_flight = 0.0
        for action in lenders:
            lender = state.workload(action.target)
            if lender is None or not isinstance(action, ScaleWorkload):
                continue
            running = lender.requests_running
            share = (lender.desired_replicas - action.replicas) / max(lender.desired_replicas, 1)
            if running.usable and running.value is not None:
                in_flight += running.value * share
        deadline = self.settings.drain_deadline_s
        profile = workload.serving_profile
        load = profile.load_s if profile is not None else None
        then = f"then {workload.name} loads ({load:g} s)" if load else f"then {workload.name} loads"
        most = f"; ready in at most {deadline + load:.0f} s" if load else ""
        return (
            f"ETA: the lent replica(s) stop admitting and finish their {in_flight:.0f} request(s) "
            f"in flight (drain deadline {deadline:g} s), exit, {then}{most}"
        )

    def _waiting_above(
        self, workload: Workload, state: ClusterState, cards: PlanCards
    ) -> str | None:
        """A higher-priority workload whose wanted replicas are not placed yet (waiting for
        cards being freed) on nodes this workload's pool could use too."""
        mine = self.settings.pool(workload.pool).priority
        selector = _selector(state, workload.pool)
        for other in cards.waiting:
            if self.settings.pool(other.pool).priority <= mine:
                continue
            theirs = _selector(state, other.pool)
            if any(matches(n.labels, selector) and matches(n.labels, theirs) for n in state.nodes):
                return other.name
        return None

    def _reclaim(
        self, workload: Workload, state: ClusterState, cards: PlanCards, need: int
    ) -> tuple[list[Action], str] | None:
        """Scale-downs of lower-priority workloads that free, with the cards already free there,
        `need` cards on one eligible node (policies.rules.priority judges the pair)."""
        mine = self.settings.pool(workload.pool).priority
        selector = _selector(state, workload.pool)
        capacity = node_capacity(state)
        for node in state.nodes:
            if not node.schedulable or not matches(node.labels, selector):
                continue
            found = capacity.get(node.name)
            # Cards nobody holds count, and so do those of replicas already on their way out.
            freed = (found.free_cards if found is not None else 0) + _leaving(state, node.name)
            actions: list[Action] = []
            for other in _lower_on(state, node.name, mine, self.settings, self._held):
                on_node = sum(1 for r in other.placement if node.name in r.nodes)
                on_node = min(on_node, other.desired_replicas)
                take = min(on_node, -(-(need - freed) // max(other.cards_per_replica, 1)))
                if take <= 0:
                    continue
                freed += take * other.cards_per_replica
                cards.release(other.pool, take * other.cards_per_replica)
                actions.append(
                    ScaleWorkload(
                        workload=other.name,
                        replicas=other.desired_replicas - take,
                        reason=f"pool {workload.pool} (priority {mine}) needs its cards on "
                        f"{node.name} back",
                    )
                )
                if freed >= need:
                    return actions, node.name
        return None


def _leaving(state: ClusterState, node: str) -> int:
    """Cards on `node` held by replicas beyond their workload's desired count (terminating)."""
    cards = 0
    for w in state.workloads:
        surplus = len(w.placement) - w.desired_replicas
        if surplus > 0:
            here = sum(1 for r in w.placement if node in r.nodes)
            cards += min(surplus, here) * w.cards_per_replica
    return cards


def _selector(state: ClusterState, pool: str) -> dict[str, str]:
    found = state.pool(pool)
    return dict(found.node_selector) if found else {}


def _lower_on(
    state: ClusterState,
    node: str,
    priority: int,
    settings: RulesSettings,
    held: frozenset[str] = frozenset(),
) -> Iterable[Workload]:
    """Workloads of lower-priority pools with a replica on `node`, lowest priority first (none
    of a held pool: its readings cannot tell whether its cards are free to take)."""
    lower = [
        w
        for w in state.workloads
        if settings.pool(w.pool).priority < priority
        and w.pool not in held
        and w.desired_replicas > 0
        and any(node in r.nodes for r in w.placement)
    ]
    return sorted(lower, key=lambda w: (settings.pool(w.pool).priority, w.name))


def _stuck(workload: Workload, state: ClusterState, release_after_s: float) -> list[float]:
    """How long each replica that has waited `release_after_s` or more for a node has waited
    (a scale-up nothing can place is released, not left pending forever). None is while a node
    the workload may run on is lost or not ready: its replicas wait for that node to come back,
    which is not a want of room."""
    now = state.observed_at
    waits = [
        (now - r.waiting_since).total_seconds()
        for r in workload.placement
        if not r.nodes and r.waiting_since is not None
    ]
    stuck = [w for w in waits if w >= release_after_s]
    if not stuck or workload.desired_replicas < len(stuck):
        return []  # the usual case, told without looking at the pool's nodes
    for name in state.pool_nodes(workload.pool):
        facts = state.node_facts(name)
        if facts is not None and not facts.ready:
            return []
    return stuck
