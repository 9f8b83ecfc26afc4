"""The Cluster primitives on the simulated cluster: place, cordon, uncordon, scale down."""

from __future__ import annotations

from lab.sim.backend import SimCluster
from tools.backends.base import Cluster


def test_it_is_a_cluster() -> None:
    assert isinstance(SimCluster.homelab(), Cluster)


def test_place_on_a_chosen_card() -> None:
    sim = SimCluster.homelab()
    cards = [g.uuid for g in sim.observe().node("render-1").gpus]  # type: ignore[union-attr]
    result = sim.place("burst-llm", "render-1", (cards[1],))
    assert result.ok and result.changed
    placement = sim.observe().workload("burst-llm").placement  # type: ignore[union-attr]
    assert [(p.nodes, p.gpus, p.ready) for p in placement] == [(("render-1",), (cards[1],), False)]
    assert not sim.place("burst-llm", "render-1", (cards[1],)).ok  # that card is taken now
    assert not sim.place("burst-llm", "gx10-a").ok  # not in its node selector


def test_a_cordoned_node_takes_nothing_until_uncordoned() -> None:
    sim = SimCluster.homelab()
    assert sim.cordon("render-1").changed
    assert not sim.cordon("render-1").changed  # idempotent
    refused = sim.scale("render", 1)
    assert not refused.ok and "cordoned" in refused.message
    assert sim.uncordon("render-1").changed
    assert sim.scale("render", 1).ok


def test_scale_down_finishes_in_flight_work_then_frees_the_card() -> None:
    sim = SimCluster.homelab()
    assert sim.scale("tts", 0).ok
    sim.advance(10)
    card = sim.observe().node("ws-1").gpus[0]  # type: ignore[union-attr]
    assert card.clients == ("worker/0",)
    assert sim.observe().workload("tts").desired_replicas == 0  # type: ignore[union-attr]
