"""The simulator versions what it observes as a real producer and metric source do: a workload
whose readings alone changed keeps its `version` (what its shape decides is kept) and gets a
new `readings_version`; one whose replicas changed gets a new `version`."""

from __future__ import annotations

from lab.sim.backend import SimCluster
from tests.sim.conftest import steady
from tools.model import Workload


def _by_name(sim: SimCluster) -> dict[str, Workload]:
    return {w.name: w for w in sim.observe().workloads}


def test_new_readings_keep_the_version_and_new_replicas_change_it() -> None:
    sim = SimCluster.from_scenario(steady("gx10", 120))
    sim.advance(120)
    before = _by_name(sim)
    sim.advance(15)
    after = _by_name(sim)
    moved = [
        name
        for name, w in after.items()
        if w.queue_depth != before[name].queue_depth or w.tokens_per_s != before[name].tokens_per_s
    ]
    assert moved, "the steady demand moves some queue between two scrapes"
    same_shape = [
        name
        for name in moved
        if (before[name].desired_replicas, before[name].ready_replicas, before[name].placement)
        == (after[name].desired_replicas, after[name].ready_replicas, after[name].placement)
    ]
    assert same_shape, "some workload's readings moved while its replicas stayed"
    for name in same_shape:
        old, new = before[name], after[name]
        assert new.version == old.version
        assert new.readings_version not in ("", old.readings_version)
    name = next(n for n, w in after.items() if w.desired_replicas > 0)
    result = sim.scale(name, after[name].desired_replicas - 1)
    assert result.ok, result
    sim.advance(1)
    scaled = _by_name(sim)[name]
    assert scaled.desired_replicas == after[name].desired_replicas - 1
    assert scaled.version != after[name].version
