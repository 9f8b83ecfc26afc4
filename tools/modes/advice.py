"""When rotating pays: the seeds' rule as a pure function the rules planner calls.

"A model in cluster has to win something you cannot get from two separate models; merely being
bigger is not enough." Clustered, the GX10 pair serves one stream at 40.9 tok/s with 1,048,576
tokens of context and models that fit in no single node; split, it serves ~170 tok/s in total
over many parallel requests, against 95.5 clustered. So the demand decides:

- each mode serves the demand it can: requests pinned to a model only that mode runs, requests
  whose context exceeds the mode's, and any other request; its throughput is its single-stream
  speed times the streams it can serve, capped at its aggregate peak;
- a rotation is worth it when the tokens gained over the demand's horizon, after the switch's
  downtime, exceed what the downtime costs (the tokens the current mode would have served), by a
  margin — and never before the minimum dwell time in the current mode (hysteresis).

Nothing here observes or acts: `rotation_gain` reads an observation and a demand and returns
advice with its reasons and figures.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from tools.model import ClusterState, Mode, Workload


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Streams(_Model):
    """Concurrent requests (queued or running) of one kind."""

    count: float = Field(ge=0)
    context: int = Field(default=0, ge=0)
    """Tokens of context each needs (input + output); 0: short."""
    workload: str | None = None
    """The workload whose model they ask for; None: any mode's model will do."""


class Demand(_Model):
    streams: tuple[Streams, ...] = ()
    longest_tokens: int = Field(default=0, ge=0)
    """The longest request the active mode is serving or queuing now (input + output): a
    mode that cannot hold it would refuse it after the switch."""
    horizon_s: float = Field(default=1800.0, gt=0)
    """How long this demand is expected to last (the gain is counted over it)."""


class AdviceSettings(_Model):
    min_dwell_s: float = Field(default=1800.0, ge=0)
    """The policy's minimum time in a mode before another rotation."""
    switch_downtime_s: float = Field(default=300.0, ge=0)
    """What a switch costs, serving nothing: drain, memory freed, model load, probe."""
    gain_margin: float = Field(default=1.5, ge=1)
    """The gain must exceed the downtime's cost this many times."""


class RotationAdvice(_Model):
    rotate: bool
    target: str | None = None
    """The mode to rotate to (also set when only the dwell time holds it back)."""
    reason: str
    wins: tuple[str, ...] = ()
    """What the target wins that the current mode cannot give."""
    rates_tok_s: dict[str, float] = {}
    """Each mode's expected throughput for this demand."""
    gain_tokens: float = 0.0
    cost_tokens: float = 0.0
    dwell_left_s: float = 0.0


def servable(mode: Mode, streams: Streams) -> bool:
    """Whether the mode can serve these requests at all (their model, their context)."""
    if streams.workload is not None and streams.workload not in mode.workloads:
        return False
    return streams.context <= mode.max_context


def rate(mode: Mode, demand: Demand) -> float:
    """Tokens/s the mode delivers for the demand: single stream x streams, capped at the peak."""
    count = sum(s.count for s in demand.streams if servable(mode, s))
    return min(mode.aggregate_peak_tok_s, mode.single_stream_tok_s * count)


def rotation_gain(
    state: ClusterState,
    demand: Demand,
    settings: AdviceSettings | None = None,
    now: datetime | None = None,
) -> RotationAdvice:
    """Whether to rotate the active mode's node group, to which mode, and why."""
    settings = settings or AdviceSettings()
    now = now or state.observed_at
    active = state.mode(state.active_mode.name) if state.active_mode else None
    if active is None or state.active_mode is None:
        return RotationAdvice(rotate=False, reason="no mode is active: nothing to rotate from")
    rivals = [m for m in state.modes if m.name != active.name and set(m.nodes) & set(active.nodes)]
    rates = {m.name: round(rate(m, demand), 2) for m in (active, *rivals)}
    if not any(rates.values()):
        return RotationAdvice(
            rotate=False,
            reason="no demand on the pair's workloads: nothing to gain",
            rates_tok_s=rates,
        )
    if not rivals:
        return RotationAdvice(
            rotate=False, reason=f"no other mode shares {active.name}'s nodes", rates_tok_s=rates
        )
    best = max(rivals, key=lambda m: (rates[m.name], m.name))
    current, target = rates[active.name], rates[best.name]
    if demand.longest_tokens > best.max_context:
        return RotationAdvice(
            rotate=False,
            reason=f"{active.name} is serving requests of up to {demand.longest_tokens:,} tokens "
            f"that {best.name} cannot hold (its context is {best.max_context:,})",
            rates_tok_s=rates,
        )
    useful_s = max(0.0, demand.horizon_s - settings.switch_downtime_s)
    gain = (target - current) * useful_s
    cost = current * settings.switch_downtime_s
    wins = _wins(active, best, demand)
    figures = (
        f"{best.name} {target:g} tok/s against {active.name} {current:g} tok/s; gain "
        f"{gain:,.0f} tokens over {demand.horizon_s:g} s against {cost:,.0f} lost in "
        f"{settings.switch_downtime_s:g} s of switch"
    )
    common = {"rates_tok_s": rates, "gain_tokens": round(gain), "cost_tokens": round(cost)}
    if target <= current or not wins:
        return RotationAdvice(
            rotate=False,
            reason=f"{active.name} serves this demand as well or better: {figures}",
            wins=wins,
            **common,
        )
    if gain <= cost * settings.gain_margin:
        return RotationAdvice(
            rotate=False,
            target=best.name,
            reason=f"the gain does not pay for the switch: {figures}",
            wins=wins,
            **common,
        )
    dwelt = (now - state.active_mode.since).total_seconds()
    left = max(0.0, settings.min_dwell_s - dwelt)
    if left > 0:
        return RotationAdvice(
            rotate=False,
            target=best.name,
            reason=f"{best.name} would pay, "
            f"but {active.name} has run only {dwelt:.0f} s of its minimum "
            f"{settings.min_dwell_s:g} s",
            wins=wins,
            dwell_left_s=left,
            **common,
        )
    return RotationAdvice(
        rotate=True, target=best.name, reason=f"{'; '.join(wins)}: {figures}", wins=wins, **common
    )


def _wins(current: Mode, target: Mode, demand: Demand) -> tuple[str, ...]:
    """What the target gives that the current mode cannot (the seeds' rule)."""
    wins: list[str] = []
    models = sum(
        s.count
        for s in demand.streams
        if s.workload and servable(target, s) and not servable(current, s)
    )
    if models:
        wins.append(f"{models:g} stream(s) ask for a model only {target.name} runs")
    longer = sum(
        s.count for s in demand.streams if s.context > current.max_context and servable(target, s)
    )
    if longer:
        wins.append(
            f"{longer:g} stream(s) need more than {current.max_context:,} tokens of context"
        )
    total = sum(s.count for s in demand.streams if servable(current, s) and servable(target, s))
    per_stream = min(target.single_stream_tok_s, target.aggregate_peak_tok_s / max(total, 1))
    now_stream = min(current.single_stream_tok_s, current.aggregate_peak_tok_s / max(total, 1))
    if total and per_stream > now_stream:
        wins.append(
            f"{total:g} stream(s) run at {per_stream:.1f} tok/s each instead of {now_stream:.1f}"
        )
    return tuple(wins)


def demand_from_state(state: ClusterState, horizon_s: float = 1800.0) -> Demand:
    """The demand on the mode workloads as an observation shows it.

    Requests queued or running on the active mode's workloads may be served by any mode (the
    gateway routes the pool's requests to whichever serves); requests queued on a workload of an
    inactive mode asked for that workload's model. Running streams are the gateway's count of
    requests being served, never fewer than tokens/s over the mode's single-stream speed (that
    alone is only a floor: it can never exceed peak / single, however many agents run in
    parallel). A request the active mode refused as longer than its context is a stream that
    needs that context; the longest request it serves or queues is kept (a rival that cannot
    hold it is no choice). Stale or missing readings count as nothing.
    """
    active = state.mode(state.active_mode.name) if state.active_mode else None
    streams: list[Streams] = []
    longest = 0
    for mode in state.modes:
        for name in mode.workloads:
            workload = state.workload(name)
            if workload is None:
                continue
            queued = workload.queue_depth.value if workload.queue_depth.usable else None
            count = queued or 0.0
            if mode is active:
                count += _running(workload, mode)
                held = workload.longest_request_tokens
                if held.usable and held.value:
                    longest = max(longest, int(held.value))
                refused = workload.context_refused_tokens
                if refused.usable and (refused.value or 0) > mode.max_context:
                    # All a refusal proves is "longer than this mode holds": any mode with a
                    # longer context may serve it (the longest refused may fit none at all).
                    streams.append(Streams(count=1, context=mode.max_context + 1))
            if count <= 0:
                continue
            pinned = None if mode is active else name
            streams.append(Streams(count=round(count, 2), workload=pinned))
    return Demand(streams=tuple(streams), horizon_s=horizon_s, longest_tokens=longest)


def _running(workload: Workload, mode: Mode) -> float:
    """Requests the workload is serving now: the gateway's count, and never fewer than its
    tokens/s can account for at the mode's single-stream speed (see demand_from_state)."""
    floor = 0.0
    if workload.tokens_per_s.usable and mode.single_stream_tok_s:
        floor = (workload.tokens_per_s.value or 0.0) / mode.single_stream_tok_s
    running = workload.requests_running
    if running.usable and running.value is not None:
        return max(running.value, floor)
    return floor
