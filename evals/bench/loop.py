"""`steward bench loop`: what one tick of the loop costs.

Three figures, each from real ticks of a `Runtime` in a throw-away data dir (checkpoints, the
decision log with fsync, the simulated cluster saved when something changed):
- `tick` — one pass of the agent (observe, assess, plan, guard, act, verify, record) with the
  rules planner on a simulated fleet of `nodes` nodes x 8 cards with steady demand (target:
  p99_ms <= 100 at 1,000 nodes). What `Runtime.tick` does between two decisions runs untimed
  before each: the periodic save of the simulated cluster (`housekeep`, every second of wall
  time, as the daemon does it) and 15 s of simulated world time, which on a real cluster pass
  by themselves and are not the agent's;
- `idle` — one tick on the homelab with no demand: it ends after assess (target <= 10 ms);
- `peak_rss_mb` — the process's peak memory over both (target <= 250 MB).
`sim` times, apart, what the simulator spends letting 15 s pass and observing 8,000 cards.
"""

from __future__ import annotations

import logging
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from agent.cli.bench import Figures, measure, peak_rss_mb
from agent.daemon.runtime import Runtime
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy
from tools.backends.sim import SimCluster
from tools.sim.demand import PoissonDemand
from tools.sim.profiles import fleet
from tools.sim.scenario import FleetProfile, Scenario

FLEET_POLICY = DEFAULT_POLICY.parent / "examples" / "fleet.yaml"
INTERVAL_S = 15.0
WEEKDAY_NOON = datetime(2026, 3, 4, 17, 0, tzinfo=UTC)
"""Wednesday, 12:00 in the fleet policy's New York: no quiet window holds the planner back."""


def bench_figures(nodes: int, runs: int) -> dict[str, Any]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(prefix="steward-bench-") as tmp:
        fleet_tick, sim = _ticks(Path(tmp) / "fleet", _fleet(nodes), _fleet_policy(), runs, "tick")
        simulated = measure("sim", lambda: _sim_tick(sim), runs)
        idle_tick, _ = _ticks(Path(tmp) / "idle", Scenario(mode="cluster"), None, runs, "idle")
    return {
        "name": "loop",
        "nodes": nodes,
        "gpus": nodes * 8,
        "runs": runs,
        "median_ms": fleet_tick.median_ms,
        "p99_ms": fleet_tick.p99_ms,
        "tick": fleet_tick.model_dump(),
        "idle_homelab": idle_tick.model_dump(),
        "sim": simulated.model_dump(),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _between(runtime: Runtime, sim: SimCluster) -> None:
    """What `Runtime.tick` does around a decision, untimed: the save due after the previous
    one (`housekeep`), then 15 s of the world."""
    runtime.housekeep()
    sim.advance(INTERVAL_S)


def _sim_tick(sim: SimCluster) -> None:
    sim.advance(INTERVAL_S)
    sim.observe()


def _fleet(nodes: int) -> Scenario:
    profile = fleet(nodes, 8, seed=0)
    pools = sorted({w.pool for w in profile.workloads})
    demand = tuple(
        PoissonDemand(target=pool, rate_per_min=30.0, input_tokens=1000, output_tokens=200)
        for pool in pools
    )
    return Scenario(
        name=f"bench-fleet-{nodes}",
        profile=FleetProfile(nodes=nodes, gpus_per_node=8),
        mode=None,
        demand=demand,
        start=WEEKDAY_NOON,
    )


def _fleet_policy() -> Policy | None:
    return load_policy(FLEET_POLICY) if FLEET_POLICY.is_file() else None


def _ticks(
    data_dir: Path, scenario: Scenario, policy: Policy | None, runs: int, name: str
) -> tuple[Figures, SimCluster]:
    sim = SimCluster.open(data_dir, scenario)
    runtime = Runtime.open(data_dir, sim, policy or load_policy(DEFAULT_POLICY))
    try:
        runtime.start()
        return measure(name, runtime.decide, runs, setup=lambda: _between(runtime, sim)), sim
    finally:
        runtime.close()
