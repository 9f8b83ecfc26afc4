"""`steward bench sim`: what observing the simulated cluster and one tick of it cost at fleet size.

A fleet profile (lab.sim.profiles.fleet) with demand at half capacity, warmed up for a minute of
simulated time so queues and scrapes are in their steady state, then observe() plus one tick of
the simulator, timed.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from agent.cli.common import JsonOpt, console, emit_json
from lab.cli import bench
from lab.sim.backend import SimCluster
from lab.sim.scenario import fleet_scenario


@bench.app.command("sim")
def bench_sim(
    nodes: Annotated[int, typer.Option("--nodes", min=1, max=20_000, help="Fleet nodes.")] = 1000,
    gpus_per_node: Annotated[
        int, typer.Option("--gpus-per-node", min=1, max=16, help="Cards per node.")
    ] = 8,
    runs: Annotated[int, typer.Option("--runs", min=5, help="Timed iterations.")] = 100,
    json_out: JsonOpt = False,
) -> None:
    """Time observe() plus one simulated tick on a fleet profile (demand at half capacity)."""
    sim = SimCluster.from_scenario(fleet_scenario(nodes, gpus_per_node))
    sim.advance(60)  # queues and scrapes in their steady state, not a cold start

    def tick() -> None:
        sim.observe()
        sim.advance(sim.profile.tick_s)

    figures = bench.measure(f"sim {nodes}x{gpus_per_node}", tick, runs)
    result = {
        **figures.model_dump(),
        "nodes": nodes,
        "gpus": nodes * gpus_per_node,
        "workloads": len(sim.profile.workloads),
        "tick_s": sim.profile.tick_s,
        "scrape_interval_s": sim.profile.scrape_interval_s,
        # Wall-clock figures: say how busy the machine was with other work while they ran.
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    if json_out:
        emit_json(result)
        return
    console.print(
        f"observe() + one {sim.profile.tick_s:g} s tick on {nodes} nodes x {gpus_per_node} cards: "
        f"median {figures.median_ms:.2f} ms, p99 {figures.p99_ms:.2f} ms over {runs} runs"
    )
