"""Assess: pure functions that turn one observation and the loop's memory into `Signals`.

Signals are facts a planner can act on: queue wait against the SLO, demand trend, how long each
workload has been idle or calm, cards held by idle workloads, a shared card counted twice, link
paths below nominal or on the wrong GID, stale metrics, and whether demand has favoured the other
serving mode for long enough. `findings` lists what needs a decision; when it is empty the tick
ends after assess and no planner — no LLM — is called. Notices (anomalies, links) are reported
but decide nothing by themselves: no action of the planner can fix a cable. A pool whose running
workloads have stale or missing readings is held — nothing of it is idle or calm, so nothing is
scaled down — and a finding says so, naming the readings with their source and reason.
"""

from __future__ import annotations

from datetime import datetime

from agent.signals.faults import degraded_links, sharing_suspects
from agent.signals.memory import Memory, WorkloadMemory
from agent.signals.model import Signals, WorkloadSignals
from agent.signals.settings import AssessSettings
from agent.signals.workloads import signals_of
from policies.activity import unread
from policies.history import History
from policies.model import Policy
from tools.model import ClusterState, Mode
from tools.placement import sharing_anomalies


def assess(
    state: ClusterState, memory: Memory, settings: AssessSettings, policy: Policy
) -> tuple[Signals, Memory]:
    """The signals of this observation, and the memory to carry to the next tick.

    Idleness is the policy's own notion (policies.activity, folded by History.observed), so the
    planner proposes a scale-to-zero exactly when the guard will count the pool as idle.
    """
    now = state.observed_at
    pools = History(last_busy=memory.last_busy, watching_since=memory.watching_since).observed(
        state, policy
    )
    workload_signals: list[WorkloadSignals] = []
    remembered: dict[str, WorkloadMemory] = {}
    stale: list[str] = []
    for workload in state.workloads:
        since = pools.idle_since(workload.pool) if workload.pool in policy.pools else None
        idle_for = None if since is None else (now - since).total_seconds()
        signal, mem = signals_of(
            workload, now, memory.workloads.get(workload.name), settings, idle_for or None
        )
        workload_signals.append(signal)
        remembered[workload.name] = mem
        if signal.stale:
            stale.append(f"{workload.name}/queue")
    held = _held_pools(state, settings.metric_max_age_s)
    if held:
        # Readings nobody can trust are neither idle nor calm: no scale-down, and the calm
        # spell starts again once they are fresh (the idle time is reset by History.observed).
        # (A copy only where something is to reset: held pools stay held tick after tick.)
        for i, signal in enumerate(workload_signals):
            if signal.pool not in held:
                continue
            if signal.idle_for_s is not None or signal.calm_for_s is not None:
                workload_signals[i] = signal.model_copy(
                    update={"idle_for_s": None, "calm_for_s": None}
                )
            mem = remembered[signal.workload]
            if mem.calm_since is not None:
                remembered[signal.workload] = mem.model_copy(update={"calm_since": None})
    favoured, since, why = _favoured_mode(state, workload_signals, memory, settings)
    seen_at = now if favoured else None
    if favoured is None and _within(memory.mode_seen_at, now, settings.mode_grace_s):
        # A single quiet reading does not reset the dwell: demand is noisy tick to tick.
        favoured, since, seen_at = (
            memory.mode_favoured,
            memory.mode_favoured_since,
            (memory.mode_seen_at),
        )
        why = memory.mode_because
    signals = Signals(
        observed_at=now,
        workloads=tuple(workload_signals),
        idle_cards=_idle_cards(state, workload_signals),
        shared_card_anomalies=_anomalies(state),
        degraded_links=degraded_links(state, settings.link_min_fraction),
        stale_metrics=tuple(stale),
        held_pools=tuple(held),
        active_mode=state.active_mode.name if state.active_mode else None,
        favoured_mode=favoured if _dwelt(since, now, settings.mode_dwell_s) else None,
        favoured_because=why,
        findings=(),
    )
    found = (*findings(state, signals, settings), *held.values())
    signals = signals.model_copy(update={"findings": found})
    new_memory = Memory(
        workloads=remembered,
        last_busy=pools.last_busy,
        watching_since=pools.watching_since,
        mode_favoured=favoured,
        mode_favoured_since=since,
        mode_seen_at=seen_at,
        mode_because=why,
        denied=memory.denied,
    )
    return signals, new_memory


def _held_pools(state: ClusterState, max_age_s: float) -> dict[str, str]:
    """Pools with a running workload whose readings are stale or missing, and the finding."""
    held: dict[str, str] = {}
    for pool in dict.fromkeys(w.pool for w in state.workloads):
        count, named = unread(state, pool, max_age_s)
        if count:
            more = f" and {count - len(named)} more" if count > len(named) else ""
            held[pool] = (
                f"pool {pool}: {count} reading(s) stale or missing ({'; '.join(named)}{more}); "
                "held: no scale-down or scale-to-zero until they are fresh"
            )
    return held


def _anomalies(state: ClusterState) -> tuple[str, ...]:
    suspects = sharing_suspects(state)
    if not suspects.nodes:
        return ()
    return tuple(f"{a.node}: {a.summary}" for a in sharing_anomalies(suspects))


def findings(state: ClusterState, signals: Signals, settings: AssessSettings) -> tuple[str, ...]:
    """What needs a decision, one sentence each; empty means the tick ends here."""
    found: list[str] = []
    pool_cards: dict[str, int] = {}
    for workload in state.workloads:
        pool_cards[workload.pool] = pool_cards.get(workload.pool, 0) + workload.cards
    for w in signals.workloads:
        if w.stale:
            continue
        if w.queue_depth is None:
            # A workload without a request queue (render, batch): only its idleness decides.
            if _idle_long(w, settings):
                found.append(f"{w.workload}: idle for {w.idle_for_s:.0f} s")
            continue
        if w.desired_replicas == 0 and w.queue_depth > 0:
            found.append(f"{w.workload}: {w.queue_depth:g} queued with no replica")
        elif w.slo is not None:
            found.extend(_slo_findings(w, settings))
        elif w.desired_replicas > 0 and is_hot(w, settings):
            found.append(
                f"{w.workload}: queue {w.queue_depth:g}, wait {w.queue_wait_s or 0:.1f} s "
                f"against an SLO of {w.slo_wait_s:g} s"
            )
        elif _idle_long(w, settings):
            found.append(f"{w.workload}: idle for {w.idle_for_s:.0f} s")
        elif _calm_long(w, state, pool_cards, settings):
            found.append(f"{w.workload}: queue calm for {w.calm_for_s:.0f} s")
    if signals.favoured_mode and signals.favoured_mode != signals.active_mode:
        found.append(
            f"demand has favoured mode {signals.favoured_mode} for "
            f"{settings.mode_dwell_s:g} s or more: {signals.favoured_because}"
        )
    return tuple(found)


def _slo_findings(w: WorkloadSignals, settings: AssessSettings) -> list[str]:
    """What the capacity model asks of a profiled workload: more replicas (the forecast's or the
    reactive layer's), one fewer after the keep time, zero after a long enough quiet, a drift."""
    view = w.slo
    assert view is not None
    found: list[str] = []
    if view.drift:
        found.append(view.drift)
    if view.need > w.desired_replicas:
        why = f"reactive: {view.reactive}" if view.reactive else f"sized by {view.deciding}"
        found.append(
            f"{w.workload}: the SLO needs {view.need} replica(s), {w.desired_replicas} asked "
            f"({why})"
        )
    elif zero_due(w, settings):
        found.append(
            f"{w.workload}: no arrival for {view.quiet_for_s or 0:.0f} s (zero after "
            f"{view.zero_after_s:.0f} s)"
        )
    elif view.release_to is not None and view.release_to < w.desired_replicas:
        found.append(
            f"{w.workload}: {view.release_to} replica(s) have covered the forecast for "
            f"{view.keep_s:.0f} s; {w.desired_replicas} asked"
        )
    return found


def zero_due(w: WorkloadSignals, settings: AssessSettings) -> bool:
    """A profiled workload with replicas, in a pool that may go to zero, that has seen no
    arrival for its zero-after time and that the policy counts idle as long as it asks."""
    view = w.slo
    return (
        view is not None
        and w.desired_replicas > 0
        and view.quiet_for_s is not None
        and view.quiet_for_s >= view.zero_after_s
        and view.need == 0
        and _idle_long(w, settings)
    )


def is_hot(w: WorkloadSignals, settings: AssessSettings) -> bool:
    """Demand above what the current replicas serve within the SLO."""
    if w.queue_depth is None:
        return False
    ratio = w.wait_ratio
    per_replica = w.queue_depth / max(w.ready_replicas, 1)
    return (ratio is not None and ratio >= settings.hot_ratio) or (
        per_replica >= settings.hot_depth_per_replica
    )


def _idle_long(w: WorkloadSignals, settings: AssessSettings) -> bool:
    idle_after = settings.idle_to_zero_s.get(w.pool)
    return (
        idle_after is not None
        and w.desired_replicas > 0
        and settings.min_cards.get(w.pool, 0) == 0
        and w.idle_for_s is not None
        and w.idle_for_s >= idle_after
    )


def _calm_long(
    w: WorkloadSignals, state: ClusterState, pool_cards: dict[str, int], settings: AssessSettings
) -> bool:
    """Calm long enough, and the pool (its cards as `state.pool_cards` counts them, worked out
    once per tick in `pool_cards`) keeps its minimum without one replica."""
    if w.desired_replicas <= 1 or w.calm_for_s is None or w.calm_for_s < settings.calm_s:
        return False
    workload = state.workload(w.workload)
    per_replica = workload.cards_per_replica if workload else 1
    return pool_cards.get(w.pool, 0) - per_replica >= settings.min_cards.get(w.pool, 0)


def _idle_cards(state: ClusterState, signals: list[WorkloadSignals]) -> int:
    by_name = {s.workload: s for s in signals}
    idle = 0
    for workload in state.workloads:
        signal = by_name[workload.name]
        if signal.idle_for_s is not None and signal.idle_for_s > 0:
            idle += workload.cards
    return idle


def _favoured_mode(
    state: ClusterState,
    signals: list[WorkloadSignals],
    memory: Memory,
    settings: AssessSettings,
) -> tuple[str | None, datetime | None, str]:
    """The mode demand favours now (if not the active one), since when, and why.

    Four readings, in order: requests queued for a model only another mode serves; requests the
    active mode refused as longer than its context that another mode holds; the active
    mode saturated (near its aggregate peak) or over its queue SLO while another mode has more
    aggregate throughput (cluster -> split);
    the active mode serving no more than one stream at a time while another mode has a faster
    single stream (split -> cluster). A mode whose metrics are not all fresh favours nothing.
    """
    if state.active_mode is None:
        return None, None, ""
    active = state.mode(state.active_mode.name)
    if active is None:
        return None, None, ""
    by_name = {s.workload: s for s in signals}
    mine = [by_name[w] for w in active.workloads if w in by_name]
    if not mine or any(s.stale or s.queue_depth is None for s in mine):
        return None, None, ""
    others = [m for m in state.modes if m.name != active.name]
    found: tuple[str, str] | None = None
    for mode in others:
        queued = sum(
            by_name[w].queue_depth or 0.0
            for w in mode.workloads
            if w in by_name and not by_name[w].stale
        )
        if queued > 0:
            found = (mode.name, f"{queued:g} request(s) queued for models only {mode.name} serves")
            break
    if found is None:
        found = _longer_context(state, active, others)
    served = sum(s.tokens_per_s or 0.0 for s in mine)
    saturated = served >= settings.saturation * active.aggregate_peak_tok_s > 0
    if found is None and (saturated or any(is_hot(s, settings) for s in mine)):
        wider = max(others, key=lambda m: m.aggregate_peak_tok_s, default=None)
        if wider is not None and wider.aggregate_peak_tok_s > active.aggregate_peak_tok_s:
            found = (
                wider.name,
                f"{active.name} is at {served:.1f} of its {active.aggregate_peak_tok_s:g} tok/s "
                f"peak or over its queue SLO; {wider.name} serves "
                f"{wider.aggregate_peak_tok_s:g} tok/s in aggregate",
            )
    if found is None:
        queued = sum(s.queue_depth or 0.0 for s in mine)
        faster = max(others, key=lambda m: m.single_stream_tok_s, default=None)
        if (
            faster is not None
            and faster.single_stream_tok_s > active.single_stream_tok_s
            and queued == 0
            and 0 < served <= active.single_stream_tok_s
        ):
            found = (
                faster.name,
                f"{active.name} serves one stream at a time ({served:.1f} tok/s); "
                f"{faster.name} streams at {faster.single_stream_tok_s:g} tok/s",
            )
    if found is None:
        return None, None, ""
    since = memory.mode_favoured_since if memory.mode_favoured == found[0] else None
    return found[0], since or state.observed_at, found[1]


def _longer_context(
    state: ClusterState, active: Mode, others: list[Mode]
) -> tuple[str, str] | None:
    """A mode that holds the context of requests the active mode refused as too long."""
    longest = 0.0
    for name in active.workloads:
        workload = state.workload(name)
        refused = workload.context_refused_tokens if workload else None
        if refused is not None and refused.usable and refused.value:
            longest = max(longest, refused.value)
    if longest <= active.max_context:
        return None
    # A refusal proves only "longer than the active mode holds": a longer context serves some.
    holds = [m for m in others if m.max_context > active.max_context]
    if not holds:
        return None
    mode = max(holds, key=lambda m: (m.aggregate_peak_tok_s, m.name))
    return (
        mode.name,
        f"{active.name} refused requests of up to {longest:,.0f} tokens (its context is "
        f"{active.max_context:,}); {mode.name} holds {mode.max_context:,}",
    )


def _within(at: datetime | None, now: datetime, seconds: float) -> bool:
    return at is not None and (now - at).total_seconds() <= seconds


def _dwelt(since: datetime | None, now: datetime, dwell_s: float) -> bool:
    return since is not None and (now - since).total_seconds() >= dwell_s
