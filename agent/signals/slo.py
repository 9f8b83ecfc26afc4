"""One profiled workload against its pool's TTFT target: offered work, forecast, sizing.

For a workload whose replicas have a profile (`Workload.serving_profile`) in a pool with a
TTFT target, each new reading (a scrape is folded once) is turned into offered work — request
slots in flight at the ITL target, plus what waits — and folded into the short, medium and long
windows and Holt's forecast; the forecast one model load plus one tick ahead is sized to the SLO
(agent.capacity.sizing). A reactive layer (agent.capacity.reactive, thresholds from the policy's
`reactive` keys) adds at once what no forecast saw: a KV cache nearly full, more requests running
per replica than the largest batch meeting the ITL target or an ITL reading above it, a
short-window TTFT above a share of the target, requests waiting on readings in a row. The view
also says whether one replica fewer pays (agent.capacity.release) and how long the workload has
been quiet. Pure: readings and memory in, the view and memory out.

Offered work is read from what the engines export: decode tokens/s times the ITL at the target
batch (Little's law: the slots those tokens keep busy), or the requests running if more, plus
those waiting.
"""

from __future__ import annotations

from datetime import datetime

from agent.capacity import forecast, release, windows
from agent.capacity.reactive import Readings, Thresholds, react
from agent.capacity.replica import (
    MIN_BATCH_FOR_CORRECTION,
    Capacity,
    capacity,
    corrected,
    drifted,
)
from agent.capacity.sizing import FORECAST_Z, Demand, size_shared
from agent.signals.memory import SloMemory
from agent.signals.model import SloView
from agent.signals.settings import AssessSettings
from tools.model import Metric, ServingProfile, Workload

SHORT_HIGH = 0.9
"""The short window's high percentile the sizing covers."""
WAITING_SHARE = 0.25
"""A reading counts as "requests waiting" when the oldest has waited this share of the TTFT
target: an engine's queue holds arrivals for a step or two in the normal course."""
GAP_PERCENTILE = 0.95
"""The idle gaps' percentile that going to zero waits out."""
WARM_READINGS = 8
"""Readings the forecast must have folded before its sizing may give a replica back, and before
its forecasts are scored (the record that widens it)."""


def slo_view(
    workload: Workload,
    now: datetime,
    mem: SloMemory | None,
    settings: AssessSettings,
) -> tuple[SloView | None, SloMemory | None]:
    """The capacity model's view of `workload` and its memory (None, None: not sized so)."""
    profile = workload.serving_profile
    ttft = settings.slo_ttft_s.get(workload.pool)
    if profile is None or ttft is None:
        return None, None
    max_age = settings.metric_max_age_s
    depth = _read(workload.queue_depth, now, max_age)
    if depth is None:
        return None, mem  # no trustworthy reading: assess holds the workload
    mem = mem or SloMemory()
    itl_target = settings.slo_itl_s.get(workload.pool, settings.default_itl_s)
    served = _read(workload.tokens_per_s, now, max_age) or 0.0
    running = _read(workload.requests_running, now, max_age) or 0.0
    prompts = _read(workload.prompt_tokens_per_s, now, max_age)
    done = _read(workload.requests_per_s, now, max_age)
    # The engines' counters, where exported: what this scrape saw (mean prompt and output of
    # its requests, the share of a replica's time spent prefilling) measures the work in flight.
    sized = prompts is not None and done is not None and done > 0
    prompt_tokens = prompts / done if sized and prompts is not None and done else None
    output_tokens = served / done if sized and done else None
    share = (prompts or 0.0) / (profile.prefill_tok_s * max(workload.ready_replicas, 1))
    cap = capacity(
        profile,
        itl_target,
        prefill_share=share,
        tokens_per_request=_sum(prompt_tokens, output_tokens),
        correction=mem.correction,
    )
    # Little's law: slots held decoding (tokens/s x the ITL at the target) and prefilling
    # (prompt tokens/s over the prefill rate), or the requests running if more.
    in_flight = max(served * cap.itl_s + (prompts or 0.0) / cap.prefill_tok_s, running)
    wait = _read(workload.queue_wait_s, now, max_age)
    read_at = (workload.queue_depth.observed_at or now).timestamp()
    t = now.timestamp()
    fresh = mem.read_at is None or read_at > mem.read_at
    if fresh:
        mem = _fold(
            mem,
            read_at,
            in_flight=in_flight,
            depth=depth,
            served=served,
            running=running,
            workload=workload,
            slots=cap.slots,
            waited=(wait or 0.0) >= WAITING_SHARE * ttft,
            prefill_share=share,
            rates=(prompts, done),
        )
    assert mem.holt is not None and mem.windows is not None
    load_s = profile.load_s or 0.0
    horizon = load_s + mem.holt.step_s
    ahead = forecast.ahead(mem.holt, horizon)
    holt, recent = mem.holt, mem.windows
    if fresh and holt.readings >= WARM_READINGS:
        # Scored only once warm: the first readings climb from nothing (a counter's rate needs
        # two scrapes, the windows start at the first reading), and a forecast of that climb is
        # no record of the load's own surprises.
        mem = mem.model_copy(
            update={"misses": forecast.expect(mem.misses, read_at + horizon, ahead.mean)}
        )
    # Sizing plans for the work of the last minutes, not for one scrape's: requests' mean prompt
    # and output over the medium window, and the prompts' prefill at the short window's high.
    prompt_mean, output_mean = _means(mem, fallback=(prompt_tokens, output_tokens))
    prefill_high = mem.prompt_rate.high(SHORT_HIGH) if mem.prompt_rate else (prompts or 0.0)
    speed = mem.correction

    def capacity_at(replicas: int) -> Capacity:
        """One replica's capacity when `replicas` share the prompts' prefill."""
        return capacity(
            profile,
            itl_target,
            prefill_share=prefill_high / (profile.prefill_tok_s * max(replicas, 1)),
            tokens_per_request=_sum(prompt_mean, output_mean),
            correction=speed,
        )

    demand = Demand(
        now=in_flight,
        forecast=forecast.widened(ahead, mem.misses, FORECAST_Z),
        short_high=recent.high(SHORT_HIGH),
        queued=depth,
        prompt_tokens=prompt_mean,
        output_tokens=output_mean,
        prompt_rate=prefill_high,
    )
    # Sized at the replicas whose own prefill share serves the demand, not at those running
    # now: what one replica fewer would ask is what the sizing asks (the N/(N-1) check).
    sizing, _ = size_shared(
        demand, capacity_at, ttft_s=ttft, ttft_share=settings.reactive_ttft_share
    )
    readings = Readings(
        ready=workload.ready_replicas,
        running=max(0.0, running),  # a sum of floats may come back a hair below zero
        waiting=max(0.0, depth),
        in_flight=max(0.0, in_flight),
        kv_usage=_read(workload.kv_cache_usage, now, max_age),
        ttft_s=_read(workload.ttft_s, now, max_age),
        itl_s=_read(workload.itl_s, now, max_age),
        waited_readings=mem.waiting,
    )
    limits = Thresholds(
        ttft_s=ttft,
        itl_s=itl_target,
        kv_usage=settings.reactive_kv,
        ttft_share=settings.reactive_ttft_share,
        itl_share=settings.reactive_itl_share,
        waiting_readings=settings.reactive_waiting_readings,
    )
    reactive, reactive_need = react(readings, limits, lambda n: capacity_at(n).slots)
    keep = release.keep_s(
        load_s, settings.keep_loads.get(workload.pool, settings.default_keep_loads)
    )
    quiet_for = mem.quiet.quiet_for(t)
    zero_after = release.zero_after(keep, mem.quiet.usual_gap(GAP_PERCENTILE))
    if release.quiet_enough(quiet_for, keep, mem.quiet.usual_gap(GAP_PERCENTILE)) and not depth:
        need = 0  # nothing arrived for longer than the usual gap: a forecast of nothing
    else:
        floor = 1 if workload.desired_replicas > 0 or depth > 0 else 0
        need = max(sizing.need, reactive_need, floor)
    needs = tuple((at, n) for at, n in (*mem.needs, (t, need)) if t - at <= release.HISTORY_S)
    if mem.needs and mem.needs[-1][0] >= t:
        needs = mem.needs  # the same tick again
    if holt.readings < WARM_READINGS:
        needs = ()  # a forecast of a few readings says too little to give anything back on
    drift, told = _drift(
        mem, served=served, running=running, workload=workload, profile=profile, slots=cap.slots
    )
    mem = mem.model_copy(update={"needs": needs, "drift_told": told})
    wait = release.release_after(needs, workload.desired_replicas, keep)
    view = SloView(
        need=need,
        sized=sizing.need,
        terms=sizing.terms,
        deciding=sizing.deciding,
        words=sizing.words,
        forecast=demand.forecast,
        reactive=reactive,
        release_to=release.release_to(needs, workload.desired_replicas, t, wait),
        keep_s=keep,
        release_after_s=wait,
        quiet_for_s=quiet_for,
        zero_after_s=zero_after,
        drift=drift,
        drifting=told,
    )
    return view, mem


def _sum(a: float | None, b: float | None) -> float | None:
    return a + b if a is not None and b is not None else None


def _means(
    mem: SloMemory, fallback: tuple[float | None, float | None]
) -> tuple[float | None, float | None]:
    """Mean prompt and output tokens of the requests completed over the medium window (the
    scrape's own when the windows have no requests yet)."""
    done = mem.request_rate.medium if mem.request_rate else 0.0
    if mem.prompt_rate is None or mem.decode_rate is None or done <= 0:
        return fallback
    return mem.prompt_rate.medium / done, mem.decode_rate.medium / done


def _fold(
    mem: SloMemory,
    at: float,
    *,
    in_flight: float,
    depth: float,
    served: float,
    running: float,
    workload: Workload,
    slots: int,
    waited: bool,
    prefill_share: float = 0.0,
    rates: tuple[float | None, float | None] = (None, None),
) -> SloMemory:
    """Memory after one new reading (`waited`: its oldest waiting request has waited long
    enough to count, see WAITING_SHARE)."""
    offered = in_flight + depth
    folded = windows.fold(mem.windows, offered, at)
    # The forecast follows the short window, not the raw scrape: a scrape's own noise is what
    # the queueing rule and the short window's high percentile cover.
    holt = forecast.update(mem.holt, folded.short, at)
    misses = forecast.came(mem.misses, offered, at)
    busy = offered > 0 or served > 0
    tick = holt.step_s
    quiet = windows.seen(mem.quiet, busy, at, min_gap_s=1.5 * tick)
    correction = mem.correction
    profile = workload.serving_profile
    ready = workload.ready_replicas
    if profile is not None and ready > 0:
        streams = running / ready
        if streams >= max(MIN_BATCH_FOR_CORRECTION, 0.5 * slots):
            # Decode runs in the time prefill leaves: that share is modelled, not corrected.
            decode = served / ready / max(0.1, 1.0 - min(prefill_share, 0.9))
            correction, _ = corrected(correction, decode, streams, profile)
    prompts, done = rates
    counted = prompts is not None and done is not None
    return mem.model_copy(
        update={
            "prompt_rate": windows.fold(mem.prompt_rate, prompts or 0.0, at) if counted else None,
            "request_rate": windows.fold(mem.request_rate, done or 0.0, at) if counted else None,
            "decode_rate": windows.fold(mem.decode_rate, served, at) if counted else None,
            "read_at": at,
            "holt": holt,
            "misses": misses,
            "windows": folded,
            "quiet": quiet,
            "correction": correction,
            "waiting": mem.waiting + 1 if depth > 0 and waited else 0,
        }
    )


def _drift(
    mem: SloMemory,
    *,
    served: float,
    running: float,
    workload: Workload,
    profile: ServingProfile,
    slots: int,
) -> tuple[str, bool]:
    """A finding when the replicas serve beyond +-25 % of the profile, told once per drift
    (read, like the correction, only at batches near the target's)."""
    ready = workload.ready_replicas
    if ready == 0:
        return "", mem.drift_told
    streams = running / ready
    if streams < max(MIN_BATCH_FOR_CORRECTION, 0.5 * slots):
        return "", mem.drift_told
    predicted = streams / (profile.itl_base_s + profile.itl_per_seq_s * streams)
    raw = (served / ready) / predicted if predicted > 0 else 1.0
    if not drifted(raw):
        return "", False
    if mem.drift_told:
        return "", True
    return (
        f"{workload.name}: replicas serve {served / ready:.0f} tok/s each at {streams:.0f} "
        f"streams where the profile predicts {predicted:.0f} ({raw:.0%}); the correction stays "
        "within +-25 %: re-profile the model"
    ), True


def _read(metric: Metric, now: datetime, max_age_s: float) -> float | None:
    aged = metric.aged(now, max_age_s)
    return aged.value if aged.usable else None
