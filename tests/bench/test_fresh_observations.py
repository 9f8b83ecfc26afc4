"""The speed benchmarks time fresh observations: parsed from JSON, a chosen share of nodes
changed each time, and they say so in their figures (`churn`, `parse`)."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from agent.cli.app import app
from lab.bench.fresh import ChurnedFleet, FreshSim, scrape_interval_s
from lab.bench.policy_fleet import fleet_state
from lab.sim.scenario import FleetProfile, Scenario

runner = CliRunner()


def _bench(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["bench", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["median_ms"] > 0 and doc["p99_ms"] >= doc["median_ms"]
    assert doc["parse"]["median_ms"] > 0 and doc["parse"]["runs"] >= 5
    return doc


def test_bench_loop_states_its_churn_and_times_parsing_apart() -> None:
    doc = _bench("loop", "--nodes", "8", "--runs", "5", "--churn", "0.5")
    assert doc["churn"] == 0.5 and doc["tick"]["runs"] == 5
    assert doc["tick_cpu"]["runs"] == 5 and doc["tick_cpu"]["median_ms"] > 0
    seen = doc["observations"]
    assert seen["node_scrape_interval_s"] == 30.0
    assert 0 < seen["nodes_changed_median"] < 1  # some nodes changed, some did not


def test_bench_policy_and_place_change_the_share_of_nodes_asked_for() -> None:
    policy = _bench("policy", "--nodes", "40", "--runs", "5", "--actions", "10", "--churn", "0.25")
    assert policy["churn"] == 0.25 and policy["nodes_changed_per_run"] == 10
    assert sum(policy["decisions"].values()) == 10
    place = _bench("place", "--nodes", "40", "--replicas", "5", "--runs", "5", "--churn", "0.1")
    assert place["churn"] == 0.1 and place["nodes_changed_per_run"] == 4
    assert place["replicas_placed"] == 5


def test_a_churn_the_fleet_cannot_be_scraped_at_is_refused() -> None:
    result = runner.invoke(app, ["bench", "loop", "--nodes", "8", "--runs", "5", "--churn", "0.01"])
    assert result.exit_code == 2
    assert "--churn" in result.output and "0.05" in result.output


def test_a_fresh_simulated_observation_shares_no_object_with_the_one_before() -> None:
    scenario = Scenario(
        profile=FleetProfile(nodes=12, gpus_per_node=2, node_scrape_interval_s=60.0), mode=None
    )
    sim = FreshSim(scenario)
    before = sim.prepare()
    assert sim.observe() is before  # nothing happened since: the same observation
    sim.advance(15.0)
    after = sim.observe()
    assert after == sim.prepare() and after is not before
    pairs = list(zip(before.nodes, after.nodes, strict=True))
    assert all(a is not b and a.gpus[0] is not b.gpus[0] for a, b in pairs)
    kept = [a for a, b in pairs if a == b]
    assert kept and len(kept) < len(pairs)
    assert scrape_interval_s(0.25) == 60.0


def test_a_churned_fleet_changes_its_nodes_in_turn() -> None:
    fleet = ChurnedFleet(fleet_state(8), 0.25)
    first, second = fleet.next(), fleet.next()
    changed = {a.name for a, b in zip(first.nodes, second.nodes, strict=True) if a != b}
    assert len(changed) == 2
    third = fleet.next()
    again = {a.name for a, b in zip(second.nodes, third.nodes, strict=True) if a != b}
    assert len(again) == 2 and again.isdisjoint(changed)
