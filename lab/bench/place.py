"""`steward bench place`: what placing 100 replicas on a 1,000-node fleet costs.

Every run places the replicas one by one on a fresh observation: the fleet with `churn` of its
nodes changed since the run before, dumped and parsed from JSON (lab/bench/fresh.py). So the
run pays what a tick on a real backend pays: the capacity of the nodes that changed counted
again, the rest found by version, never by object identity. Parsing is timed apart (`parse`);
the capacity of the first, cold observation is `capacity_build_ms`.

The fleet is the simulator's fleet profile (pools selected by label, ~70 % of the cards in use)
or a synthetic one (every node eligible, `fleet_state`).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import typer

from agent.cli.common import JsonOpt, console, emit_json
from lab.bench.fresh import ChurnedFleet
from lab.cli import bench
from lab.cli.bench import ChurnOpt, figures, measure
from lab.sim.backend import SimCluster
from lab.sim.scenario import FleetProfile, Scenario
from tools.model import ClusterState, Gpu, Metric, Node, Pool, Sharing, Taint, Workload
from tools.placement import load_catalog, node_capacity, pick_nodes

TARGET_MEDIAN_MS = 50.0


def bench_figures(
    nodes: int, gpus_per_node: int, *, replicas: int, runs: int, fleet: str, churn: float
) -> dict[str, Any]:
    first, name = _bench_fleet(fleet, nodes, gpus_per_node)
    catalog = load_catalog()
    start = time.perf_counter()
    node_capacity(first, catalog)
    capacity_ms = (time.perf_counter() - start) * 1000
    observations = ChurnedFleet(first, churn)
    current = [observations.next()]
    placed: list[int] = []

    def next_observation() -> None:
        current[0] = observations.next()

    def once() -> None:
        state = current[0]
        workload = state.workload(name)
        assert workload is not None
        placed.append(len(pick_nodes(workload, state, replicas, catalog=catalog)))

    label = f"place {replicas} replicas of {name} on {nodes}x{gpus_per_node} ({fleet})"
    timed = measure(label, once, runs, setup=next_observation)
    return {
        **timed.model_dump(),
        "fleet": fleet,
        "churn": churn,
        "nodes_changed_per_run": observations.per_observation,
        "workload": name,
        "nodes": nodes,
        "gpus_per_node": gpus_per_node,
        "replicas": replicas,
        "replicas_placed": placed[-1],
        "capacity_build_ms": round(capacity_ms, 1),
        "parse": figures("parse", observations.parse_ms).model_dump(),
        "target_median_ms": TARGET_MEDIAN_MS,
        "met": timed.median_ms <= TARGET_MEDIAN_MS,
    }


def fleet_state(nodes: int, gpus_per_node: int) -> ClusterState:
    """A fleet of `nodes` x `gpus_per_node` H200s, a quarter of the cards busy, for the bench.

    Every fourth node is cordoned or tainted or carries a PreferNoSchedule taint or MPS-shared
    cards in turn, so the ranking exercises every path; memory is measured on every card.
    """
    at = datetime(2026, 3, 2, tzinfo=UTC)
    total = 141 * 10**9
    node_list: list[Node] = []
    for i in range(nodes):
        name = f"node-{i:04d}"
        shared = i % 16 == 3
        gpus = []
        for j in range(gpus_per_node):
            busy = (i + j) % 4 == 0
            gpus.append(
                Gpu(
                    uuid=f"GPU-{i:04d}-{j:02d}",
                    index=j,
                    model="H200" if i % 3 else "H100",
                    node=name,
                    memory_total_bytes=Metric.fresh(total, at),
                    memory_used_bytes=Metric.fresh(90 * 10**9 if busy else 0, at),
                    sharing=Sharing(mode="mps", replicas=2) if shared else Sharing(),
                    clients=(f"llm-mid/{i * gpus_per_node + j}",) if busy else (),
                )
            )
        taints = {
            5: (Taint(key="maintenance"),),
            9: (Taint(key="spot", effect="PreferNoSchedule"),),
        }.get(i % 16, ())
        node_list.append(
            Node(
                name=name,
                labels={"steward.dev/pool": "llm"},
                cordoned=i % 16 == 7,
                ready=i % 16 != 11,
                taints=taints,
                memory_total_bytes=2048 * 1024**3,
                memory_used_bytes=Metric.fresh(64 * 1024**3, at),
                gpus=tuple(gpus),
            )
        )
    workloads = (
        Workload(
            name="llm-small", kind="inference", pool="llm", desired_replicas=0,
            ready_replicas=0, model="qwen3-32b", context_length=32_768,
        ),
        Workload(
            name="llm-mid", kind="inference", pool="llm", desired_replicas=0, ready_replicas=0,
        ),
    )  # fmt: skip
    pool = Pool(
        name="llm", workloads=("llm-small", "llm-mid"), node_selector={"steward.dev/pool": "llm"}
    )
    return ClusterState(
        observed_at=at, source="bench", nodes=tuple(node_list), workloads=workloads, pools=(pool,)
    )


def _bench_fleet(kind: str, nodes: int, gpus_per_node: int) -> tuple[ClusterState, str]:
    """The fleet to rank on and the name of the workload to place."""
    if kind == "synthetic":
        state = fleet_state(nodes, gpus_per_node)
        return state, state.workloads[0].name
    profile = FleetProfile(nodes=nodes, gpus_per_node=gpus_per_node)
    state = SimCluster.from_scenario(Scenario(profile=profile, mode=None)).observe()
    return state, next(w.name for w in state.workloads if w.model == "qwen3-32b")


@bench.app.command("place")
def bench_place(
    *,
    nodes: Annotated[int, typer.Option("--nodes", min=1, max=20_000)] = 1000,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", min=1, max=16)] = 8,
    replicas: Annotated[int, typer.Option("--replicas", min=1)] = 100,
    runs: Annotated[int, typer.Option("--runs", min=1)] = 30,
    fleet: Annotated[
        Literal["sim", "synthetic"],
        typer.Option("--fleet", help="sim: lab.sim fleet profile; synthetic: all eligible."),
    ] = "sim",
    churn: ChurnOpt = 0.05,
    json_out: JsonOpt = False,
) -> None:
    """Time placing REPLICAS replicas on a fleet (target: median_ms <= 50).

    Each run places the replicas one by one on a fresh observation (parsed from JSON, CHURN of
    the nodes changed since the run before), its capacity counted again for the changed nodes.
    """
    result = bench_figures(
        nodes, gpus_per_node, replicas=replicas, runs=runs, fleet=fleet, churn=churn
    )
    if json_out:
        emit_json(result)
        return
    console.print(
        f"{result['name']}: median {result['median_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms "
        f"over {runs} runs, churn {churn:g}; {result['replicas_placed']} placed; capacity of a "
        f"cold state {result['capacity_build_ms']:.0f} ms; target median <= 50 ms: "
        f"{'met' if result['met'] else 'MISSED'}"
    )
