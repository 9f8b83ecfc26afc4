"""`steward bench llm-prompt`: how many tokens the LLM planner's first request costs at a size.

It builds a simulated fleet (`lab.sim.profiles.fleet`) with demand on every pool and a few
lost nodes, so that the summary has findings, workloads to look at and node problems to list;
assesses it with the fleet policy; and counts the first request the planner would send: the
system prompt, the user message (the policy in brief and the bounded summary) and the tools.

Counting: with `bpe-openai` installed (a dev dependency) the counts are real o200k_base tokens
(GPT-4o's tokenizer, offline). Without it, an estimate of one token per 3 characters, which
over-counts this JSON-heavy text for both o200k (~3.5 characters a token) and Gemma's tokenizer
(~3.2, measured by the slow test on the real llama.cpp server: 2,459 tokens for the 1,000-node
request). Either way the JSON says which counter was used. Exit 1 when over the budget.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from agent.cli.common import EXIT_CHECK_FAILED, JsonOpt, console, emit_json
from agent.planners.rule_settings import RulesSettings
from agent.signals.assess import assess
from agent.signals.memory import Memory
from agent.signals.model import Signals
from lab.cli import bench
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.faults import NodeLoss
from lab.sim.scenario import FleetProfile, Scenario
from policies.loader import load_policy
from policies.model import Policy
from tools.model import ClusterState

BUDGET_TOKENS = 3500
"""The first request of a deliberation at most: system prompt, summary and tools (13 read-only
look-ups and submit_plan) — well within the 8,192-token context of the small local server."""
FLEET_POLICY = Path(__file__).parents[2] / "policies" / "examples" / "fleet.yaml"
CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 4
"""Tokens a chat template adds around each message (role markers), as OpenAI counts them."""


class PromptSize(BaseModel):
    """The first request's size in tokens, by part, and how long the summary took to build."""

    nodes: int
    cards: int
    workloads: int
    findings: int
    tokenizer: str
    system_tokens: int
    user_tokens: int
    tools_tokens: int
    total_tokens: int
    total_chars: int
    budget_tokens: int
    within_budget: bool
    median_ms: float
    p99_ms: float


def token_counter() -> tuple[str, Any]:
    """The best counter installed: o200k_base through bpe-openai, else the estimate."""
    try:
        import bpe_openai  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return f"estimate: ceil(chars / {CHARS_PER_TOKEN:g})", lambda text: math.ceil(
            len(text) / CHARS_PER_TOKEN
        )
    encoding = bpe_openai.get_encoding("o200k_base")
    return "o200k_base (bpe-openai)", lambda text: len(encoding.encode(text))


def fleet_observation(nodes: int, gpus_per_node: int, seed: int = 0) -> ClusterState:
    """A fleet two minutes into heavy demand on every pool, with 1 % of its nodes lost."""
    pools = ("llm-large", "llm-mid", "llm-small", "embed")
    lost = tuple(NodeLoss(node=f"node-{i:04d}", at_s=30) for i in range(0, nodes, 100))
    scenario = Scenario(
        name=f"bench-llm-prompt-{nodes}",
        profile=FleetProfile(nodes=nodes, gpus_per_node=gpus_per_node),
        seed=seed,
        demand=tuple(PoissonDemand(target=p, rate_per_min=40.0 * nodes) for p in pools),
        faults=lost,
    )
    cluster = SimCluster.from_scenario(scenario)
    cluster.advance(120)
    return cluster.observe()


def everything_wrong(state: ClusterState, signals: Signals) -> tuple[ClusterState, Signals]:
    """The worst summary: every node lost, every workload a finding, every node an anomaly."""
    nodes = tuple(n.model_copy(update={"ready": False}) for n in state.nodes)
    findings = tuple(
        f"{w.workload}: queue 999, wait 99.0 s against an SLO of 5 s" for w in signals.workloads
    )
    anomalies = tuple(
        f"{n.name}: scheduler counts 16 GPUs used of 8 (MPS counted twice)" for n in nodes
    )
    return (
        # Its fields only: iterating a state also yields the indexes it worked out for itself.
        ClusterState(
            **{**{f: getattr(state, f) for f in ClusterState.model_fields}, "nodes": nodes}
        ),
        signals.model_copy(update={"findings": findings, "shared_card_anomalies": anomalies}),
    )


def fleet_signals(state: ClusterState, policy: Policy) -> Signals:
    settings = RulesSettings.from_policy(policy).assess
    signals, _ = assess(state, Memory(), settings, policy)
    return signals


def measure_prompt(state: ClusterState, signals: Signals, policy: Policy, runs: int) -> PromptSize:
    from agent.planners.llm.planner import (
        first_request,  # the openai client loads only for this bench
    )

    tokenizer, count = token_counter()
    request = first_request(state, signals, policy)
    system, user = (m["content"] for m in request["messages"])
    tools = json.dumps(request["tools"])
    figures = bench.measure("llm-prompt", lambda: first_request(state, signals, policy), runs)
    sizes = {"system": count(system), "user": count(user), "tools": count(tools)}
    total = sum(sizes.values()) + MESSAGE_OVERHEAD * 2
    return PromptSize(
        nodes=len(state.nodes),
        cards=state.gpu_count,
        workloads=len(state.workloads),
        findings=len(signals.findings),
        tokenizer=tokenizer,
        system_tokens=sizes["system"],
        user_tokens=sizes["user"],
        tools_tokens=sizes["tools"],
        total_tokens=total,
        total_chars=len(system) + len(user) + len(tools),
        budget_tokens=BUDGET_TOKENS,
        within_budget=total <= BUDGET_TOKENS,
        median_ms=figures.median_ms,
        p99_ms=figures.p99_ms,
    )


@bench.app.command("llm-prompt")
def llm_prompt(
    nodes: Annotated[int, typer.Option("--nodes", min=1, max=20_000)] = 1000,
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", min=1, max=16)] = 8,
    runs: Annotated[int, typer.Option("--runs", min=1, max=1000)] = 20,
    worst: Annotated[
        bool, typer.Option("--worst", help="Every node lost, every workload a finding.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """The LLM planner's first request in tokens for a fleet of N nodes (budget 3,000)."""
    policy = load_policy(FLEET_POLICY)
    state = fleet_observation(nodes, gpus_per_node)
    signals = fleet_signals(state, policy)
    if worst:
        state, signals = everything_wrong(state, signals)
    size = measure_prompt(state, signals, policy, runs)
    if json_out:
        emit_json(size)
    else:
        console.print(
            f"{size.nodes} nodes, {size.cards} cards, {size.workloads} workloads, "
            f"{size.findings} findings\n"
            f"prompt: {size.total_tokens} tokens ({size.tokenizer}) = system {size.system_tokens}"
            f" + user {size.user_tokens} + tools {size.tools_tokens}; budget {size.budget_tokens}"
            f"\nbuilt in {size.median_ms:.2f} ms median, {size.p99_ms:.2f} ms p99"
        )
    if not size.within_budget:
        raise typer.Exit(EXIT_CHECK_FAILED)
