"""`steward bench policy`: what judging a 100-action plan against a 1,000-node fleet costs.

Every run judges a fresh observation: the fleet of lab/bench/policy_fleet.py with `churn` of
its nodes changed since the run before, dumped and parsed from JSON (lab/bench/fresh.py), so
nothing the engine derives is found by object identity — only by the nodes' versions, as it
would be on a real backend. Parsing is the backend's work and is timed apart (`parse`).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agent.cli.common import JsonOpt, console, emit_json
from lab.bench.fresh import ChurnedFleet
from lab.bench.policy_fleet import fleet_plan, fleet_policy, fleet_state
from lab.cli import bench
from lab.cli.bench import ChurnOpt, figures, measure
from policies.engine import judge
from policies.history import History

TARGET_MEDIAN_MS = 5.0


def bench_figures(runs: int, nodes: int, actions: int, churn: float) -> dict[str, Any]:
    first = fleet_state(nodes)
    plan = fleet_plan(first, actions)
    policy = fleet_policy()
    history = History()
    judgement = judge(plan, first, policy, history)
    observations = ChurnedFleet(first, churn)
    current = [observations.next()]
    cpu_ms: list[float] = []

    def next_observation() -> None:
        current[0] = observations.next()

    timed = measure(
        "policy",
        lambda: judge(plan, current[0], policy, history),
        runs,
        setup=next_observation,
        cpu_ms=cpu_ms,
    )
    decisions = {
        d: sum(v.decision == d for v in judgement.verdicts)
        for d in ("allow", "deny", "needs_approval")
    }
    return {
        **timed.model_dump(),
        "churn": churn,
        "nodes_changed_per_run": observations.per_observation,
        "nodes": len(first.nodes),
        "gpus": first.gpu_count,
        "workloads": len(first.workloads),
        "actions": len(plan.actions),
        "decisions": decisions,
        # CPU time per judgement: the engine's own cost, apart from what other processes on a
        # shared machine take from the wall clock.
        "cpu_mean_ms": round(sum(cpu_ms) / runs, 3),
        "parse": figures("parse", observations.parse_ms).model_dump(),
        "target_median_ms": TARGET_MEDIAN_MS,
        "met": timed.median_ms <= TARGET_MEDIAN_MS,
    }


@bench.app.command("policy")
def bench_policy(
    runs: Annotated[int, typer.Option("--runs", min=5, help="Timed runs.")] = 100,
    nodes: Annotated[
        int, typer.Option("--nodes", min=4, max=20_000, help="Nodes in the state.")
    ] = 1000,
    actions: Annotated[int, typer.Option("--actions", min=1, help="Actions in the plan.")] = 100,
    churn: ChurnOpt = 0.05,
    as_json: JsonOpt = False,
) -> None:
    """Time judging a 100-action plan against a 1,000-node state (target: median <= 5 ms),
    each run on a fresh observation parsed from JSON with CHURN of the nodes changed."""
    out = bench_figures(runs, nodes, actions, churn)
    if as_json:
        emit_json(out)
        return
    console.print(
        f"policy: judge {out['actions']} actions on {out['nodes']} nodes / {out['gpus']} GPUs / "
        f"{out['workloads']} workloads, churn {churn:g} — median {out['median_ms']:.3f} ms, "
        f"p99 {out['p99_ms']:.3f} ms over {runs} runs, {out['cpu_mean_ms']:.3f} ms CPU each "
        f"(target median <= 5 ms: {'met' if out['met'] else 'MISSED'}); parse median "
        f"{out['parse']['median_ms']:.0f} ms apart; decisions {out['decisions']}",
        highlight=False,
    )
