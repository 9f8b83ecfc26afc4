"""No flapping: up at the SLO, down only after a calm spell; stale readings hold everything."""

from __future__ import annotations

import itertools
from datetime import timedelta
from pathlib import Path

from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.signals.assess import assess
from lab.sim.demand import BurstDemand, PoissonDemand
from lab.sim.scenario import Scenario
from policies.loader import load_default_policy
from tests.loop.conftest import open_runtime
from tools.model import ClusterState

SURGES = tuple(
    BurstDemand(target="burst-llm", rate_per_min=240, at_s=60 + i * 330, duration_s=90)
    for i in range(6)
)
NOISY = Scenario(
    name="noisy",
    seed=3,
    replicas={"render": 0, "burst-llm": 1},
    demand=(*SURGES, PoissonDemand(target="burst-llm", rate_per_min=2)),
)
"""Surges every 5.5 minutes over a trickle: the queue swings far above and below its SLO."""


def test_a_scale_down_never_follows_a_scale_up_within_the_calm_spell(data_dir: Path) -> None:
    with open_runtime(data_dir, NOISY) as runtime:
        reports = [runtime.tick(15.0) for _ in range(200)]
        calm_s = runtime.ctx.settings.assess.calm_s
    changes: list[tuple[int, str]] = []
    for r in reports:
        for action, verdict in zip(r.actions, r.verdicts, strict=True):
            if verdict == "allow" and "burst-llm" in action:
                changes.append((r.tick, "up" if action.startswith("place") else "down"))
    assert ("up" in {d for _, d in changes}) and ("down" in {d for _, d in changes}), changes
    for (t1, d1), (t2, d2) in itertools.pairwise(changes):
        if d1 == "up" and d2 == "down":
            assert (t2 - t1) * 15.0 >= calm_s, changes
    # Six surges in 50 minutes move the pool a handful of times, not every tick.
    assert len(changes) <= 200 * 15.0 / calm_s, changes


def test_stale_metrics_hold_every_workload_as_it_is(data_dir: Path) -> None:
    with open_runtime(data_dir, NOISY) as runtime:
        for _ in range(40):
            runtime.tick(15.0)
        state = runtime.ctx.cluster.observe()
        memory = runtime.memory
    policy = load_default_policy()
    settings = RulesSettings.from_policy(policy)
    # The scrapers stopped ten minutes ago: every reading is now stale.
    later = ClusterState.model_validate(
        {**state.model_dump(), "observed_at": state.observed_at + timedelta(minutes=10)}
    )
    signals, _ = assess(later, memory, settings.assess, policy)
    assert {"burst-llm/queue", "tts/queue"} <= set(signals.stale_metrics)
    # Every running pool is held, and each is a finding that names its stale readings.
    assert signals.held_pools
    assert len(signals.findings) == len(signals.held_pools)
    assert all("stale or missing" in f and "held" in f for f in signals.findings)
    plan = RulesPlanner(settings).plan(later, signals)
    assert not [a for a in plan.actions if a.type in ("scale_workload", "place_replica")]
    assert "burst-llm: demand metrics stale or missing, held" in plan.rationale
