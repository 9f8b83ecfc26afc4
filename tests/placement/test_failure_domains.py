"""Spread over failure domains: a new replica goes to the zone (then rack) holding fewest of
its workload's replicas, before node-level spreading and names break the tie."""

from __future__ import annotations

from lab.sim.backend import SimCluster
from lab.sim.scenario import FleetProfile, Scenario
from tools.model import ClusterState
from tools.placement import pick_node, pick_nodes
from tools.placement.demand import RACK_LABEL, ZONE_LABEL, PlacementHints

ZONES = {"node-0002": "zone-a", "node-0006": "zone-a", "node-0010": "zone-a",
         "node-0014": "zone-b"}  # fmt: skip


def _fleet() -> ClusterState:
    """16x8 fleet, llm-small-000 at 12 replicas on node-0002 and node-0006 (both zone-a);
    node-0010 (zone-a) and node-0014 (zone-b) empty and alike."""
    sim = SimCluster.from_scenario(
        Scenario(profile=FleetProfile(nodes=16, gpus_per_node=8), replicas={"llm-small-000": 12})
    )
    state = sim.observe()
    nodes = tuple(
        n.model_copy(update={"labels": {**n.labels, ZONE_LABEL: ZONES[n.name]}})
        if n.name in ZONES
        else n
        for n in state.nodes
    )
    return state.model_copy(update={"nodes": nodes})


def test_the_emptier_zone_ranks_first() -> None:
    state = _fleet()
    workload = state.workload("llm-small-000")
    assert workload is not None
    held = {n for r in workload.placement for n in r.nodes}
    assert held <= {"node-0002", "node-0006"}  # every replica in zone-a
    best = pick_node(workload, state, limit=1)[0]
    assert best.node == "node-0014"  # zone-b; node-0010 would win on its name alone


def test_without_failure_domains_the_names_decide() -> None:
    state = _fleet()
    workload = state.workload("llm-small-000")
    assert workload is not None
    blind = PlacementHints(failure_domains=())
    assert pick_node(workload, state, blind, limit=1)[0].node == "node-0010"


def test_many_replicas_fill_the_emptier_zone_first() -> None:
    state = _fleet()
    workload = state.workload("llm-small-000")
    assert workload is not None
    placed = [c.node for c in pick_nodes(workload, state, 4)]
    # zone-b holds fewer than zone-a's 12 after each of them: all four go there.
    assert [ZONES[n] for n in placed] == ["zone-b"] * 4


def test_racks_split_a_zone_when_the_zones_are_even() -> None:
    state = _fleet()
    racks = {"node-0002": "rack-1", "node-0006": "rack-1", "node-0010": "rack-2",
             "node-0014": "rack-3"}  # fmt: skip
    nodes = tuple(
        n.model_copy(update={"labels": {**n.labels, ZONE_LABEL: "zone-a",
                                        RACK_LABEL: racks[n.name]}})
        if n.name in racks
        else n
        for n in state.nodes
    )  # fmt: skip
    state = state.model_copy(update={"nodes": nodes})
    workload = state.workload("llm-small-000")
    assert workload is not None
    assert pick_node(workload, state, limit=1)[0].node in ("node-0010", "node-0014")
