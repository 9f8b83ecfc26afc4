"""`steward bench loop`: what one tick of the loop costs, on observations as a backend makes them.

Three figures, each from real ticks of a `Runtime` in a throw-away data dir (checkpoints, the
decision log with fsync, the simulated cluster saved when something changed):
- `tick` — one pass of the agent (observe, assess, plan, guard, act, verify, record) with the
  rules planner on a simulated fleet of `nodes` nodes x 8 cards with steady demand (target:
  p99_ms <= 100 at 1,000 nodes). Every observation is fresh: the simulator's snapshot dumped to
  JSON and parsed back (lab/bench/fresh.py), no object shared with the one before; the fleet
  is scraped so that `churn` of its nodes change per tick, and `metrics.max_age_s` is set for
  that scrape interval (`max_age_s`), so the readings are fresh and the agent decides as on a
  healthy fleet (now and then a tick proposes, judges and records a plan). What `Runtime.tick`
  does between two decisions runs untimed before each: the periodic save of the simulated
  cluster (`housekeep`, every second of wall time, as the daemon does it), 15 s of simulated
  world time, and parsing the observation they produced — the backend's work at the edge, timed
  apart as `parse`; `housekeep` times the daemon's own work between ticks (the saves, and the
  full garbage collection of `Runtime.rest`), which no decision waits for but the process
  pays. An observation an action made within the tick is parsed inside it (and
  counted there); `tick_cpu` is the same ticks' CPU time (all the process's threads): on a
  shared machine a tick whose wall time is far above it waited for a core or a disk, not for its
  own work;
- `idle` — one tick on the homelab with no demand: it ends after assess (target <= 10 ms);
- `peak_rss_mb` — the process's peak memory over both (target <= 250 MB).
`sim` times, apart, what the simulator spends letting 15 s pass and observing 8,000 cards.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from agent.daemon.runtime import Runtime
from agent.signals.settings import AssessSettings
from lab.bench.fresh import INTERVAL_S, FreshSim, scrape_interval_s
from lab.cli.bench import Figures, figures, measure, peak_rss_mb
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.profiles import fleet
from lab.sim.scenario import FleetProfile, Scenario
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy

FLEET_POLICY = DEFAULT_POLICY.parent / "examples" / "fleet.yaml"
DEFAULT_CHURN = 0.05
WEEKDAY_NOON = datetime(2026, 3, 4, 17, 0, tzinfo=UTC)
"""Wednesday, 12:00 in the fleet policy's New York: no quiet window holds the planner back."""


def bench_figures(nodes: int, runs: int, churn: float = DEFAULT_CHURN) -> dict[str, Any]:
    # The figures are the only thing on stdout (--json): the loop's log lines (findings
    # appearing, warnings) go to stderr, and only errors among them.
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    scrape_every = scrape_interval_s(churn)
    with tempfile.TemporaryDirectory(prefix="steward-bench-") as tmp:
        fleet = _fleet(nodes, scrape_every)
        cpu_ms: list[float] = []
        housekeep_ms: list[float] = []
        fleet_tick, sim = _ticks(
            Path(tmp) / "fleet",
            fleet,
            _fleet_policy(),
            runs,
            "tick",
            cpu_ms=cpu_ms,
            housekeep_ms=housekeep_ms,
            max_age_s=max_age_s(scrape_every),
        )
        parsed = figures("parse", sim.parse_ms[-runs:])
        housekept = figures("housekeep", housekeep_ms[-runs:])
        changed = sorted(sim.changed[-runs:])
        parses = len(sim.parse_ms)
        simulated = measure("sim", lambda: _sim_tick(sim), runs)
        idle_tick, _ = _ticks(Path(tmp) / "idle", Scenario(mode="cluster"), None, runs, "idle")
        peak = peak_rss_mb()
    return {
        "name": "loop",
        "nodes": nodes,
        "gpus": nodes * 8,
        "runs": runs,
        "churn": churn,
        "median_ms": fleet_tick.median_ms,
        "p99_ms": fleet_tick.p99_ms,
        "tick": fleet_tick.model_dump(),
        "tick_cpu": figures("tick_cpu", cpu_ms).model_dump(),
        "parse": parsed.model_dump(),
        "housekeep": housekept.model_dump(),
        "observations": {
            "node_scrape_interval_s": scrape_every,
            "nodes_changed_median": changed[len(changed) // 2],
            "parsed": parses,
            "parsed_within_ticks": parses - (runs + WARMUP),
            "metrics_max_age_s": max_age_s(scrape_every),
        },
        "idle_homelab": idle_tick.model_dump(),
        "sim": simulated.model_dump(),
        "peak_rss_mb": round(peak, 1),
    }


WARMUP = 3
"""measure()'s untimed calls before the timed ones."""
STALE_AFTER_INTERVALS = 2.5
"""A reading counts as fresh for this many scrape intervals: the simulator's own staleness."""


def max_age_s(scrape_every_s: float) -> float:
    """`metrics.max_age_s` as the fleet's user sets it for its scrape interval: the default 90 s
    at a scrape every 15-36 s, longer for slower scrapes. With the default at a 300 s interval
    (churn 5 %) most of the fleet would read stale: every pool held, a thousand findings
    flapping, and no tick deciding anything."""
    return max(AssessSettings().metric_max_age_s, STALE_AFTER_INTERVALS * scrape_every_s)


def _between(runtime: Runtime, sim: FreshSim, housekeep_ms: list[float]) -> None:
    """What `Runtime.run` does around a decision, untimed: the daemon's work after the
    previous one (`housekeep`, and `rest` as a daemon ticking in real time does before it waits;
    their time appended to `housekeep_ms`), 15 s of the world, and the backend parsing what it
    observes."""
    start = time.perf_counter()
    runtime.housekeep()
    runtime.rest()
    housekeep_ms.append((time.perf_counter() - start) * 1000)
    sim.advance(INTERVAL_S)
    sim.prepare()


def _sim_tick(sim: SimCluster) -> None:
    sim.advance(INTERVAL_S)
    SimCluster.observe(sim)  # the simulator's own snapshot, without the JSON round trip


def _fleet(nodes: int, scrape_every_s: float) -> Scenario:
    profile = fleet(nodes, 8, seed=0)
    pools = sorted({w.pool for w in profile.workloads})
    demand = tuple(
        PoissonDemand(target=pool, rate_per_min=30.0, input_tokens=1000, output_tokens=200)
        for pool in pools
    )
    return Scenario(
        name=f"bench-fleet-{nodes}",
        profile=FleetProfile(nodes=nodes, gpus_per_node=8, node_scrape_interval_s=scrape_every_s),
        mode=None,
        demand=demand,
        start=WEEKDAY_NOON,
    )


def _fleet_policy() -> Policy | None:
    return load_policy(FLEET_POLICY) if FLEET_POLICY.is_file() else None


def _ticks(
    data_dir: Path,
    scenario: Scenario,
    policy: Policy | None,
    runs: int,
    name: str,
    *,
    cpu_ms: list[float] | None = None,
    housekeep_ms: list[float] | None = None,
    max_age_s: float | None = None,
) -> tuple[Figures, FreshSim]:
    """`runs` timed decisions (after WARMUP); each timed one's CPU time appended to `cpu_ms`,
    and the untimed housekeeping before it to `housekeep_ms`.
    `max_age_s`: steward.yaml's `metrics.max_age_s` (None: the default)."""
    sim = FreshSim(scenario)
    sim.save(data_dir)
    sim.data_dir = data_dir
    thresholds = AssessSettings(metric_max_age_s=max_age_s) if max_age_s is not None else None
    runtime = Runtime.open(
        data_dir, sim, policy or load_policy(DEFAULT_POLICY), thresholds=thresholds
    )

    kept = housekeep_ms if housekeep_ms is not None else []
    try:
        runtime.start()
        figures_ = measure(name, runtime.decide, runs, warmup=WARMUP,
                           setup=lambda: _between(runtime, sim, kept), cpu_ms=cpu_ms)  # fmt: skip
        return figures_, sim
    finally:
        runtime.close()
