"""A queue spike is answered within one tick: the first observation that shows it scales up."""

from __future__ import annotations

from pathlib import Path

from lab.sim.demand import BurstDemand
from lab.sim.scenario import Scenario
from tests.loop.conftest import open_runtime

SPIKE = Scenario(
    name="spike",
    replicas={"render": 0, "burst-llm": 0},
    demand=(BurstDemand(target="burst-llm", rate_per_min=60, at_s=40, duration_s=900),),
)


def test_the_tick_that_sees_the_spike_places_a_replica(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE) as runtime:
        reports = [runtime.tick(15.0) for _ in range(8)]
        first = next(r for r in reports if any("burst-llm" in f for f in r.findings))
        assert first.actions[0].startswith("place a replica of burst-llm on render-1")
        assert first.verdicts[0] == "allow"
        assert first.executed == 1
        state = runtime.ctx.cluster.observe()
    burst = state.workload("burst-llm")
    assert burst is not None and burst.desired_replicas >= 1


def test_a_quiet_cluster_decides_nothing_and_calls_no_planner(data_dir: Path) -> None:
    with open_runtime(data_dir, Scenario(name="quiet")) as runtime:
        reports = [runtime.tick(15.0) for _ in range(6)]
        calls = runtime.ctx.telemetry.registry.get_sample_value(
            "steward_planner_seconds_count", {"planner": "rules"}
        )
    assert not any(r.decided for r in reports)
    assert all(not r.findings for r in reports)
    assert calls is None  # the planner was never called
