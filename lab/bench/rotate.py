"""`steward bench rotate`: many rotations with random faults on the simulated homelab.

Each run takes a fresh homelab (its own seed) serving a steady stream of requests on the gx10
pool, in one mode or the other, injects one fault drawn at random — none, a link path at 11 % of
nominal, a hot-plugged path at 14 Gb/s, a changed RoCE GID index, a failing probe on the target,
a node lost during the switch, transient API errors — and rotates to the other mode. Then it
checks, from the cluster and not from the saga's word, that a mode serves (a real probe answers),
and from the simulator's series that capacity was zero only inside the declared switch window.

Figures: the rates of each ending, `ended_without_working_mode` (must be 0), the simulated time
per rotation against the target's model-load time (goal <= 2x), and the wall time the saga costs
(median_ms, p99_ms).
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

import typer
from pydantic import BaseModel, ConfigDict, Field

from agent.cli.common import EXIT_CHECK_FAILED, JsonOpt, emit_json
from agent.rotation.runner import open_rotation
from lab.cli import bench
from lab.cli.bench import peak_rss_mb
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.faults import ApiErrors, Fault, GidChanged, LinkDegraded, NodeLoss, ProbeFailing
from lab.sim.scenario import Scenario
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy
from tools.errors import TemporaryError
from tools.modes import RotationOutcome

FAULTS = (
    "none",
    "link_11pct",
    "hotplug_14gbps",
    "gid_changed",
    "probe_failing",
    "node_lost_in_switch",
    "api_errors",
)
WARMUP_S = 120.0
STANDING = ("link_11pct", "hotplug_14gbps", "gid_changed")
"""Faults that stand before the rotation starts (a pending reboot, a hot-plug, a reboot)."""
STANDING_S = 30.0
GOAL_RATIO = 2.0


class BenchSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    runs: int = Field(default=100, ge=1)
    seed: int = 0


class BenchFigures(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "rotate"
    runs: int
    success_rate: float
    """Share of rotations that committed to their target."""
    rollback_rate: float
    """Share rolled back to the previous mode (after a failed probe or switch)."""
    refused_rate: float
    """Share refused at preflight (nothing was touched)."""
    fallback_rate: float
    """Share that ended in whatever mode could serve on the nodes left (a node was lost)."""
    ended_without_working_mode: int
    """Runs after which no mode workload answered a probe. Must be 0."""
    zero_capacity_outside_window: int
    """Series points with no ready mode replica outside a declared switch window. Must be 0."""
    faults: dict[str, int]
    endings_by_fault: dict[str, dict[str, int]]
    rotation_s_median: float
    rotation_s_p99: float
    model_load_s_median: float
    rotation_over_load_median: float
    """Committed rotations: simulated time per rotation / the target's model-load time."""
    rotation_over_load_p99: float
    goal_over_load: float = GOAL_RATIO
    aborted_requests: int
    median_ms: float
    """Wall time of one rotation (the saga, the simulator's minutes of model load included)."""
    p99_ms: float
    peak_rss_mb: float


ModeName = Literal["split", "cluster"]


def scenario_for(seed: int, mode: ModeName) -> Scenario:
    """A homelab in `mode`, with a steady stream of requests on the gx10 pool."""
    demand = PoissonDemand(target="gx10", rate_per_min=12, input_tokens=1500, output_tokens=300)
    return Scenario(name=f"bench-rotate-{seed}", seed=seed, mode=mode, demand=(demand,))


def fault_for(kind: str, target: str, rng: random.Random) -> list[Fault]:
    """The faults of one draw; `at_s` counts from the start of the rotation."""
    if kind == "link_11pct":
        return [LinkDegraded(link="gx10-link", path="rail-0", fraction=0.11)]
    if kind == "hotplug_14gbps":
        return [LinkDegraded(link="gx10-link", path=p, fraction=0.07) for p in ("rail-0", "rail-1")]
    if kind == "gid_changed":
        return [GidChanged(link="gx10-link", gid_index=rng.choice((0, 1, 5)))]
    if kind == "probe_failing":
        victim = "beast" if target == "cluster" else rng.choice(("resident-a", "resident-b"))
        return [ProbeFailing(workload=victim)]
    if kind == "node_lost_in_switch":
        return [NodeLoss(node=rng.choice(("gx10-a", "gx10-b")), at_s=rng.uniform(5, 200))]
    if kind == "api_errors":
        ops = ("scale", "probe", "set_accepting", "observe", "in_flight")
        return [ApiErrors(count=rng.randint(1, 3), operations=(rng.choice(ops),))]
    return []


def working_mode(sim: SimCluster) -> str | None:
    """A mode one of whose workloads answers a real probe now (retrying transient errors)."""
    state = sim.observe()
    for mode in state.modes:
        for name in mode.workloads:
            for _ in range(5):
                try:
                    if sim.probe(name).ok:
                        return mode.name
                    break
                except TemporaryError:
                    continue
    return None


def zero_outside_window(sim: SimCluster, outcome: RotationOutcome) -> int:
    """Series points at which no mode workload had a ready replica, outside the window."""
    workloads = {w for m in sim.profile.modes for w in m.workloads}
    ready: dict[datetime, int] = {}
    for p in sim.series().points:
        if p.workload in workloads:
            ready[p.at] = ready.get(p.at, 0) + p.ready_replicas
    opened, closed = outcome.window_opened_at, outcome.window_closed_at
    count = 0
    for at, n in ready.items():
        inside = opened is not None and closed is not None and opened <= at <= closed
        if n == 0 and not inside:
            count += 1
    return count


def one_run(
    i: int, settings: BenchSettings, policy: Policy, root: Path
) -> tuple[str, RotationOutcome, SimCluster, float]:
    """Rotation `i`: cluster -> split on even runs, split -> cluster on odd ones."""
    rng = random.Random(settings.seed * 1_000_003 + i)
    start_mode: ModeName = "cluster" if i % 2 == 0 else "split"
    target = "split" if start_mode == "cluster" else "cluster"
    sim = SimCluster.from_scenario(scenario_for(settings.seed * 1000 + i, start_mode))
    sim.advance(WARMUP_S)
    kind = rng.choice(FAULTS)
    for fault in fault_for(kind, target, rng):
        sim.inject(fault)
    if kind in STANDING:
        sim.advance(STANDING_S)
    where = root / f"run-{i}"
    started = time.perf_counter()
    outcome = open_rotation(sim, where, policy).rotate(target)
    return kind, outcome, sim, (time.perf_counter() - started) * 1000


def run_bench(settings: BenchSettings, policy: Policy | None = None) -> BenchFigures:
    policy = policy or load_policy(DEFAULT_POLICY)
    endings: dict[str, int] = {
        "committed": 0,
        "rolled_back": 0,
        "refused": 0,
        "fallback": 0,
        "failed": 0,
    }
    by_fault: dict[str, dict[str, int]] = {}
    without, zeros, aborted = 0, 0, 0
    wall, rotation_s, loads, ratios = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="steward-bench-rotate-") as tmp:
        for i in range(settings.runs):
            kind, outcome, sim, ms = one_run(i, settings, policy, Path(tmp))
            endings[outcome.result] += 1
            by_fault.setdefault(kind, {}).setdefault(outcome.result, 0)
            by_fault[kind][outcome.result] += 1
            wall.append(ms)
            aborted += outcome.aborted_requests
            if working_mode(sim) is None:
                without += 1
            zeros += zero_outside_window(sim, outcome)
            if outcome.result == "committed":
                load = max(_load_s(sim, w) for w in outcome.serving)
                rotation_s.append(outcome.duration_s)
                loads.append(load)
                ratios.append(outcome.duration_s / load)
    n = settings.runs
    return BenchFigures(
        runs=n,
        success_rate=round(endings["committed"] / n, 3),
        rollback_rate=round(endings["rolled_back"] / n, 3),
        refused_rate=round(endings["refused"] / n, 3),
        fallback_rate=round((endings["fallback"] + endings["failed"]) / n, 3),
        ended_without_working_mode=without,
        zero_capacity_outside_window=zeros,
        faults={k: sum(v.values()) for k, v in sorted(by_fault.items())},
        endings_by_fault=dict(sorted(by_fault.items())),
        rotation_s_median=_median(rotation_s),
        rotation_s_p99=_p99(rotation_s),
        model_load_s_median=_median(loads),
        rotation_over_load_median=round(_median(ratios), 3),
        rotation_over_load_p99=round(_p99(ratios), 3),
        aborted_requests=aborted,
        median_ms=round(_median(wall), 2),
        p99_ms=round(_p99(wall), 2),
        peak_rss_mb=round(peak_rss_mb(), 1),
    )


def _load_s(sim: SimCluster, workload: str) -> float:
    spec = sim.profile.workload(workload)
    return spec.load_s if spec is not None else 0.0


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else 0.0


def _p99(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))], 2)


@bench.app.command("rotate")
def bench_rotate(
    runs: Annotated[int, typer.Option("--runs", min=1, help="Rotations to run.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the faults and the cluster.")] = 0,
    json_out: JsonOpt = False,
) -> None:
    """RUNS rotations with random faults on the simulated homelab: how many commit, roll back or
    fall back, that none ends without a working mode, and time per rotation against model load."""
    figures = run_bench(BenchSettings(runs=runs, seed=seed))
    if json_out:
        emit_json(figures)
    else:
        bench.print_figures(figures.model_dump())
    if figures.ended_without_working_mode:
        raise typer.Exit(EXIT_CHECK_FAILED)
