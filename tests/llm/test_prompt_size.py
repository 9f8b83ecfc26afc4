"""The first request stays within its token budget at any fleet size: the summary is aggregated
by pool and lists only capped samples of what needs looking at."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from agent.planners.llm.prompts import MAX_LISTED, summary
from lab.bench.llm_prompt import (
    BUDGET_TOKENS,
    FLEET_POLICY,
    everything_wrong,
    fleet_observation,
    fleet_signals,
    measure_prompt,
)
from policies.loader import load_policy
from policies.model import Policy


@pytest.fixture(scope="module")
def fleet_policy() -> Policy:
    return load_policy(FLEET_POLICY)


@pytest.mark.parametrize("nodes", [100, 1000])
def test_the_worst_summary_is_the_same_size_at_any_scale(fleet_policy: Policy, nodes: int) -> None:
    state = fleet_observation(nodes, 8)
    worst_state, worst = everything_wrong(state, fleet_signals(state, fleet_policy))

    data = summary(worst_state, worst)
    size = measure_prompt(worst_state, worst, fleet_policy, runs=1)

    assert data["findings"] == {"count": len(worst.findings), "other": []}
    assert len(data["node_problems"]["rows"]) == MAX_LISTED
    assert data["node_problems"]["more"] == nodes - MAX_LISTED
    assert len(data["needs_attention"]["rows"]) == MAX_LISTED
    assert data["needs_attention"]["more"] == len(worst.findings) - MAX_LISTED
    assert size.total_tokens <= BUDGET_TOKENS, size


def test_the_bench_prints_the_prompt_size_as_json() -> None:
    result = CliRunner().invoke(
        app, ["bench", "llm-prompt", "--nodes", "200", "--runs", "3", "--worst", "--json"]
    )

    assert result.exit_code == 0, result.output
    size = json.loads(result.stdout)
    assert size["nodes"] == 200 and size["cards"] == 1600
    assert size["within_budget"] and size["total_tokens"] <= BUDGET_TOKENS
    assert size["total_tokens"] == (
        size["system_tokens"] + size["user_tokens"] + size["tools_tokens"] + 8
    )
    assert size["median_ms"] > 0 and size["p99_ms"] >= size["median_ms"]
