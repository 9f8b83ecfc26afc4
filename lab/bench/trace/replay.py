"""One replay: a load on a simulated cluster under one controller, measured.

`prepare` fixes what every controller faces alike: the profile, the driven pools and workloads
(burst-llm on the homelab's render box for requests, render for job traces; llm-small and llm-mid
on a fleet), the rate scale, the demand, the start (a Monday 21:00 UTC: outside the homelab
policy's daytime approval window and the fleet policy's maintenance window). `replay` then runs
the world in 5 s steps for the scored window (the duration) plus a 5-minute tail in which
arrivals go on (the trace wraps) but nothing is scored: GPU-hours count over the window, and the
requests scored are those that arrived in it (a scale-down just before the end meets the
arrivals that follow). It calls the controller every `interval_s`, and measures (record.py).

What the controllers are told is not quite the truth (issue 33's perturbation, drawn from the
seed): each driven workload serves at a hidden factor of its profiled speeds (0.85-1.15) while
every controller, Steward included, is told the profile's declared speeds alike; each
model load lasts a lognormal draw around the profile's load time, and 2 % of loads fail and
are retried (the replica is ready after a second load and a 10 s back-off).
"""

from __future__ import annotations

import math
import random
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from lab.bench.trace import figures as fig
from lab.bench.trace.base import Controller, Entry, Target, World
from lab.bench.trace.load import PEAK_LOAD, Shape, Timeline, demand_for
from lab.bench.trace.record import Arrivals, JobTrace, Meter, RecordingWindow, Sink, Tally
from lab.sim.backend import SimCluster
from lab.sim.metrics import oldest_waiting
from lab.sim.profiles import Profile, fleet, homelab
from lab.sim.scenario import FleetProfile, HomelabProfile, Scenario
from tools.errors import InvalidInput
from tools.labels import matches

START = datetime(2026, 3, 2, 21, 0, tzinfo=UTC)
STEP_S = 5.0
TAIL_S = 300.0
"""Arrivals go on for this long after the scored window; nothing in it is scored."""
CAPACITY_SPREAD = 0.15
LOAD_SIGMA = 0.25
"""Lognormal shape of a model load's duration (its mean is the profile's load time)."""
LOAD_FAILURE = 0.02
RETRY_BACKOFF_S = 10.0
HOMELAB_POOLS = {"requests": ("burst",), "jobs": ("render",)}
HOMELAB_MAX_CARDS = {"burst": 2, "render": 2}
"""policies/default.yaml's max_cards of the pools the homelab replay drives."""
FLEET_POOLS = ("llm-small", "llm-mid")


@dataclass(frozen=True, slots=True)
class Setup:
    shape: Shape
    fleet: tuple[int, int] | None
    """(nodes, cards per node), or None for the homelab."""
    slo_ttft_s: float
    duration_s: float
    rate_scale: float | None
    seed: int
    slo_itl_s: float = 0.1
    offset_s: float = 0.0
    """Where in the load the run starts (the training split starts elsewhere)."""
    perturb: bool = True
    """Hidden capacity factors, lognormal load times and failed loads (see the module doc)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    setup: Setup
    profile: Profile
    targets: tuple[Target, ...]
    timelines: dict[str, Timeline]
    """Per driven pool, scaled, over the window and the tail."""
    rate_scale: dict[str, float]
    capacity: dict[str, float] = field(default_factory=dict)
    """Per driven workload: its true speed over the profiled one (hidden from controllers)."""

    @property
    def jobs(self) -> bool:
        return self.setup.shape.kind == "jobs"


@dataclass(slots=True)
class Series:
    """What the plots draw, one point per step."""

    t: list[float] = field(default_factory=list)
    demand: list[float] = field(default_factory=list)
    """Arrivals per second in the step."""
    cards: list[int] = field(default_factory=list)
    wait_s: list[float] = field(default_factory=list)
    """The oldest waiting request's age (0: nobody waits)."""
    mode: list[str] = field(default_factory=list)
    ready: list[int] = field(default_factory=list)
    """Ready replicas of the driven workloads."""
    minute: list[float] = field(default_factory=list)
    """Start of each minute of arrivals (s), for the per-minute latencies below."""
    ttft_p90_s: list[float | None] = field(default_factory=list)
    itl_p90_s: list[float | None] = field(default_factory=list)
    """p90 TTFT and mean inter-token latency of the requests that arrived in the minute."""


@dataclass(frozen=True, slots=True)
class Outcome:
    controller: str
    knob: str
    figures: fig.Figures
    series: Series


def prepare(setup: Setup) -> Prepared:
    shape = setup.shape
    if setup.fleet is None:
        profile = homelab()
        pools: tuple[str, ...] = HOMELAB_POOLS[shape.kind]
    else:
        if shape.kind == "jobs":
            raise InvalidInput(
                "--profile fleet: render job traces run on the homelab's render pool; "
                "use --profile homelab"
            )
        profile = fleet(*setup.fleet, seed=setup.seed)
        pools = FLEET_POOLS
    targets = tuple(t for pool in pools for t in _targets(profile, pool, setup.fleet is None))
    timelines: dict[str, Timeline] = {}
    scales: dict[str, float] = {}
    window = _timeline(setup, setup.duration_s)
    timeline = _timeline(setup, setup.duration_s + TAIL_S)
    for pool in pools:
        first = next(t for t in targets if t.pool == pool)
        most = sum(t.max_replicas for t in targets if t.pool == pool)
        scale = setup.rate_scale or _auto_scale(window, first, most, shape.kind == "jobs")
        scales[pool] = scale
        timelines[pool] = timeline.scaled(scale)
    return Prepared(setup, profile, targets, timelines, scales, _capacity(setup, targets))


def _timeline(setup: Setup, span_s: float) -> Timeline:
    return setup.shape.timeline.rotated(setup.offset_s).spanning(span_s)


def _capacity(setup: Setup, targets: tuple[Target, ...]) -> dict[str, float]:
    rng = random.Random(f"capacity:{setup.seed}")
    spread = CAPACITY_SPREAD if setup.perturb else 0.0
    return {t.name: round(1.0 + rng.uniform(-spread, spread), 4) for t in targets}


def rescaled(prep: Prepared, k: float) -> Prepared:
    """`prep` with every pool's arrivals scaled by `k` more."""
    scales = {p: round(s * k, 6) for p, s in prep.rate_scale.items()}
    return with_scales(prep, scales)


def with_scales(prep: Prepared, scales: dict[str, float]) -> Prepared:
    """`prep` at these rate scales (a training split's, carried to the test)."""
    timeline = _timeline(prep.setup, prep.setup.duration_s + TAIL_S)
    timelines = {p: timeline.scaled(s) for p, s in scales.items()}
    return Prepared(prep.setup, prep.profile, prep.targets, timelines, scales, prep.capacity)


def _targets(profile: Profile, pool: str, home: bool) -> list[Target]:
    spec_pool = next(p for p in profile.pools if p.name == pool)
    out: list[Target] = []
    for name in spec_pool.workloads:
        spec = profile.workload(name)
        assert spec is not None
        per_node = {n.name: len(n.cards) for n in profile.nodes}
        eligible = [
            n for n in profile.nodes
            if matches(n.labels, spec.node_selector)
        ]  # fmt: skip
        cards = max(1, spec.cards_per_replica)
        room = sum(per_node[n.name] // cards for n in eligible)
        if home:
            room = min(room, HOMELAB_MAX_CARDS[pool] // cards)
        # The pool's workloads share its nodes: each may grow to its share of them.
        room //= len(spec_pool.workloads)
        serving = spec.serving
        out.append(
            Target(
                name=name,
                pool=pool,
                cards_per_replica=cards,
                min_replicas=0 if home else 1,
                max_replicas=max(1, room),
                load_s=spec.load_s,
                prefill_tok_s=serving.prefill_tok_s if serving else 1.0,
                decode_tok_s=serving.aggregate_peak_tok_s if serving else 1.0,
                pool_size=len(spec_pool.workloads),
            )
        )
    return out


def _auto_scale(timeline: Timeline, target: Target, most: int, jobs: bool) -> float:
    """The rate scale at which the busiest minute needs PEAK_LOAD of `most` replicas."""
    per = round(60.0 / timeline.bucket_s)
    busiest = 0.0
    for i in range(0, len(timeline.requests), per):
        if jobs:
            busy = sum(timeline.work_s[i : i + per])
        else:
            busy = target.service_s(
                sum(timeline.input_tokens[i : i + per]), sum(timeline.output_tokens[i : i + per])
            )
        busiest = max(busiest, busy / (per * timeline.bucket_s))
    if busiest <= 0:
        raise InvalidInput("the trace has no demand to replay")
    return round(min(1000.0, PEAK_LOAD * most / busiest), 4)


def replay(prep: Prepared, entry: Entry) -> Outcome:
    """Run `prep` under the controller `entry` builds, in a throw-away directory."""
    with tempfile.TemporaryDirectory(prefix="steward-trace-") as tmp:
        return _run(prep, entry, Path(tmp))


def _run(prep: Prepared, entry: Entry, work: Path) -> Outcome:
    setup = prep.setup
    rates_dir = work / "rates"
    rates_dir.mkdir()
    demand = tuple(
        d
        for pool in prep.timelines
        for d in demand_for(
            setup.shape,
            pool,
            prep.rate_scale[pool],
            rates_dir,
            per_request=setup.fleet is None,
            offset_s=setup.offset_s,
        )
    )
    profile_choice = (
        HomelabProfile() if setup.fleet is None
        else FleetProfile(nodes=setup.fleet[0], gpus_per_node=setup.fleet[1])
    )  # fmt: skip
    base = Scenario(
        name=f"trace-{setup.shape.name}",
        profile=profile_choice,
        seed=setup.seed,
        start=START,
        duration_s=setup.duration_s,
        demand=demand,
    )
    replicas = {t.name: _start(entry, prep, t) for t in prep.targets}
    scenario = base.model_copy(update={"replicas": replicas})
    sim = SimCluster(scenario)
    _perturb(sim, prep)
    counts: dict[str, Arrivals] = {}
    scored: dict[str, Arrivals] = {}
    _install(sim, scenario, prep, counts, scored)
    sink = Sink()
    for t in prep.targets:
        sim.engine.state.workloads[t.name].series = RecordingWindow(sink=sink)
    controller = entry.build(sim, work / "run")
    names = tuple(t.name for t in prep.targets)
    loads = LoadTimes(random.Random(f"loads:{setup.seed}"), setup.perturb)
    measured = _Measured(Meter(names), sink, counts, scored, {n: [] for n in names}, loads)
    try:
        return _loop(prep, sim, controller, measured, entry.knob)
    finally:
        controller.close()


def _start(entry: Entry, prep: Prepared, t: Target) -> int:
    chosen = entry.initial(t, prep.timelines[t.pool], prep.jobs)
    if chosen is not None:
        return max(0, min(chosen, t.max_replicas))
    if prep.setup.fleet is None:
        return 1  # one warm replica of the driven workload
    spec = prep.profile.workload(t.name)
    return spec.replicas if spec is not None else 1


def _perturb(sim: SimCluster, prep: Prepared) -> None:
    """The driven workloads' true speeds: the profile's times the hidden factor. The profile
    itself stays as declared: every controller, Steward included (its snapshot's serving
    profile), is told the same declared speeds; only the serving runs at the true ones."""
    for name, k in prep.capacity.items():
        if k != 1.0:
            sim.engine.true_speed[name] = k


@dataclass(slots=True)
class LoadTimes:
    """Draws each model load's duration as a replica starts loading (lognormal around the
    profile's load time; LOAD_FAILURE of them fail and load again after a back-off)."""

    rng: random.Random
    perturb: bool
    seen: set[tuple[str, int]] = field(default_factory=set)

    def draw(self, load_s: float) -> float:
        mu = -(LOAD_SIGMA**2) / 2  # the lognormal's mean is 1
        once = load_s * math.exp(self.rng.gauss(mu, LOAD_SIGMA))
        if self.rng.random() < LOAD_FAILURE:
            once += RETRY_BACKOFF_S + load_s * math.exp(self.rng.gauss(mu, LOAD_SIGMA))
        return once

    def apply(self, sim: SimCluster, names: tuple[str, ...]) -> None:
        if not self.perturb:
            return
        engine = sim.engine
        for n in names:
            for r in engine.state.workloads[n].replicas:
                key = (n, r.index)
                if r.phase != "starting" or key in self.seen:
                    continue
                self.seen.add(key)
                r.ready_at_s = r.since_s + self.draw(engine.specs[n].load_s)


def _install(
    sim: SimCluster,
    scenario: Scenario,
    prep: Prepared,
    counts: dict[str, Arrivals],
    scored: dict[str, Arrivals],
) -> None:
    """Counting generators in place of the sim's own (same specs, same seeds)."""
    end = prep.setup.duration_s + TAIL_S
    window = prep.setup.duration_s
    sim.engine.generators = [
        Tally(
            spec,
            scenario.seed * 1_000_003 + i,
            scenario.start,
            end_s=end,
            counts=counts,
            scored_s=window,
            scored=scored,
        )
        for i, spec in enumerate(scenario.demand)
    ]
    if prep.jobs:
        pool = next(iter(prep.timelines))
        sim.engine.generators.append(
            JobTrace(
                pool,
                prep.setup.shape.jobs,
                prep.rate_scale[pool],
                scenario.seed,
                end_s=end,
                counts=counts,
                scored_s=window,
                scored=scored,
            )
        )


@dataclass(slots=True)
class _Measured:
    """What the referee collects during one replay."""

    meter: Meter
    sink: Sink
    counts: dict[str, Arrivals]
    scored: dict[str, Arrivals]
    changes: dict[str, list[tuple[float, int]]]
    loads: LoadTimes
    zero_steps: set[float] = field(default_factory=set)
    """Step starts at which no driven workload had a ready replica."""
    timings: list[float] = field(default_factory=list)


def _loop(
    prep: Prepared, sim: SimCluster, controller: Controller, m: _Measured, knob: str
) -> Outcome:
    setup = prep.setup
    engine = sim.engine
    names = tuple(t.name for t in prep.targets)
    world = World(sim, prep.targets, m.counts, prep.timelines, jobs=prep.jobs)
    series = Series()
    wanted = {n: engine.state.workloads[n].desired for n in names}
    # Steward ticks as `steward run` does: time passes, then it decides.
    next_at = controller.interval_s if controller.name == "steward" else 0.0
    last_requests = 0.0
    end = setup.duration_s + TAIL_S
    while sim.elapsed_s < end - 1e-9:
        if all(engine.state.workloads[n].ready == 0 for n in names):
            m.zero_steps.add(sim.elapsed_s)
        sim.advance(STEP_S)
        m.loads.apply(sim, names)
        world.elapsed_s = sim.elapsed_s
        if sim.elapsed_s <= setup.duration_s + 1e-9:
            m.meter.step(engine, STEP_S)
        if sim.elapsed_s + 1e-9 >= next_at:
            started = time.perf_counter()
            controller.decide(world)
            m.timings.append((time.perf_counter() - started) * 1000)
            controller.between()
            next_at += controller.interval_s
        for n in names:
            now = engine.state.workloads[n].desired
            if now != wanted[n]:
                if sim.elapsed_s <= setup.duration_s + 1e-9:  # the tail is not scored
                    m.changes[n].append((sim.elapsed_s, 1 if now > wanted[n] else -1))
                wanted[n] = now
        requests = sum(a.requests for a in m.counts.values())
        _sample(series, sim, names, (requests - last_requests) / STEP_S)
        last_requests = requests
    _per_minute(series, m.sink, prep)
    return Outcome(controller.name, knob, _figures(prep, sim, m), series)


def _sample(series: Series, sim: SimCluster, names: tuple[str, ...], demand: float) -> None:
    engine = sim.engine
    t = sim.elapsed_s
    oldest = (oldest_waiting(engine.state.workloads[n]) for n in names)
    waits = [t - a for a in oldest if a is not None]
    cards = sum(len(r.cards) for n in names for r in engine.state.workloads[n].replicas)
    series.ready.append(sum(engine.state.workloads[n].ready for n in names))
    series.t.append(t)
    series.demand.append(demand)
    series.cards.append(cards)
    series.wait_s.append(max(waits, default=0.0))
    mode = next(
        (
            m.name for m in engine.profile.modes
            if all(engine.state.workloads[w].ready for w in m.workloads)
        ),
        "-",
    )  # fmt: skip
    series.mode.append(mode)


def _per_minute(series: Series, sink: Sink, prep: Prepared) -> None:
    minutes = math.ceil((prep.setup.duration_s + TAIL_S) / 60)
    ttft: list[list[tuple[float, float]]] = [[] for _ in range(minutes)]
    itl: list[list[tuple[float, float]]] = [[] for _ in range(minutes)]
    for a, v, n in sink.waits if prep.jobs else sink.ttfts:
        ttft[min(minutes - 1, int(a // 60))].append((v, n))
    for a, _, gap, n in sink.finished:
        if gap is not None:
            itl[min(minutes - 1, int(a // 60))].append((gap, n))
    series.minute = [60.0 * i for i in range(minutes)]
    series.ttft_p90_s = [fig.weighted_quantile(x, 0.9) for x in ttft]
    series.itl_p90_s = [fig.weighted_quantile(x, 0.9) for x in itl]


def _figures(prep: Prepared, sim: SimCluster, m: _Measured) -> fig.Figures:
    """The figures over the scored window: its GPU-hours and the requests that arrived in it."""
    setup = prep.setup
    window = setup.duration_s
    names = {t.name for t in prep.targets}
    rows = [r for r in sim.engine.state.series if r.workload in names]
    rejected = sum(r.rejected for r in rows if r.t <= window + STEP_S)
    aborted = sum(r.aborted for r in rows if r.t <= window + STEP_S)
    sink, meter = m.sink, m.meter
    total = round(sum(a.requests for a in m.scored.values()))
    wanted = total - rejected
    waits = [(a, v, n) for a, v, n in sink.waits if a < window]
    if prep.jobs:  # a render job's "TTFT" is its wait to start; it has no token stream
        ttfts = waits
        ttft_ok = itl_ok = both = sum(n for _, v, n in waits if v <= setup.slo_ttft_s)
    else:
        ttfts = [(a, v, n) for a, v, n in sink.ttfts if a < window]
        done = [(tt, gap, n) for a, tt, gap, n in sink.finished if a < window]
        ttft_ok = sum(n for _, v, n in ttfts if v <= setup.slo_ttft_s)
        itl_ok = sum(n for _, gap, n in done if gap is None or gap <= setup.slo_itl_s)
        both = sum(
            n for tt, gap, n in done
            if tt <= setup.slo_ttft_s and (gap is None or gap <= setup.slo_itl_s)
        )  # fmt: skip
    gaps = [(gap, n) for a, _, gap, n in sink.finished if a < window and gap is not None]

    def share(ok: float) -> float:
        return round(min(1.0, ok / wanted), 5) if wanted > 0 else 1.0

    served = sum(n for _, _, n in waits)
    from_zero = [(w, n) for a, w, n in waits if (a // STEP_S) * STEP_S in m.zero_steps]
    median_ms, p99_ms = fig.decision_ms(m.timings)
    ttft_p50, ttft_p99 = fig.weighted_quantiles([(v, n) for _, v, n in ttfts], (0.5, 0.99))
    return fig.Figures(
        slo_attainment=share(both),
        ttft_attainment=share(ttft_ok),
        itl_attainment=share(itl_ok),
        ttft_p50_s=fig.rounded(ttft_p50),
        ttft_p99_s=fig.rounded(ttft_p99),
        itl_p99_s=fig.rounded(fig.weighted_quantile(gaps, 0.99), 4),
        queue_wait_p99_s=fig.rounded(fig.weighted_quantile([(v, n) for _, v, n in waits], 0.99)),
        gpu_hours=round(meter.held_card_s / 3600, 4),
        idle_gpu_hours=round((meter.held_card_s - meter.busy_card_s) / 3600, 4),
        energy_kwh=round(meter.joules / 3.6e6, 4),
        scaling_actions=sum(len(c) for c in m.changes.values()),
        reversals=sum(fig.reversals(c) for c in m.changes.values()),
        dropped=round(max(0, wanted - served)),
        aborted=round(aborted),
        rejected=round(rejected),
        from_zero_wait_p99_s=fig.rounded(fig.weighted_quantile(from_zero, 0.99)),
        median_ms=median_ms,
        p99_ms=p99_ms,
    )
