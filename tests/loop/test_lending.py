"""Pool priorities: the render pool takes its cards back from burst when renders queue.

The render jobs are the simulator's own (a render demand: a job queue with GPU time per job).
Under the default policy burst-llm is still busy when renders queue, so the guard lets the cards
go only as a preemption by priority (pool.priority_preemption); under a policy that lets burst go
at once (tests/loop/data/lend-at-once.yaml) the same pair passes on the pool limits alone.
"""

from __future__ import annotations

from pathlib import Path

from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.signals.assess import assess
from agent.signals.memory import Memory
from lab.sim.demand import BurstArrivals, BurstDemand, RenderDemand
from lab.sim.scenario import Scenario
from policies.engine import judge
from policies.history import History
from policies.loader import load_default_policy, load_policy
from policies.model import Policy
from tests.loop.conftest import DATA, open_runtime
from tools.actions import Plan, ScaleWorkload
from tools.model import ClusterState

BORROWED = Scenario(
    name="borrowed",
    replicas={"render": 0, "burst-llm": 0},
    demand=(
        BurstDemand(target="burst-llm", rate_per_min=120, at_s=0, duration_s=3600),
        RenderDemand(
            target="render",
            gpu_s_per_job=120,
            arrivals=BurstArrivals(rate_per_min=3, at_s=235, duration_s=600),
        ),
    ),
)
"""burst-llm borrows both render cards from the start; renders start queueing at ~4 min."""


def _borrowed(data_dir: Path, quiet_ticks: int, policy: Policy) -> tuple[ClusterState, Plan]:
    """Let the agent run 14 ticks (burst-llm borrows both render cards, no render yet), then
    let the world go on `quiet_ticks` ticks without deciding, and plan once."""
    with open_runtime(data_dir, BORROWED) as runtime:
        for _ in range(14):
            runtime.tick(15.0)
        for _ in range(quiet_ticks):
            runtime.world.advance(15.0)
        state = runtime.ctx.cluster.observe()
        memory = runtime.memory
    burst = state.workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 2
    settings = RulesSettings.from_policy(policy)
    signals, _ = assess(state, memory, settings.assess, policy)
    return state, RulesPlanner(settings).plan(state, signals)


def test_renders_queue_and_burst_gives_the_cards_back(data_dir: Path) -> None:
    policy = load_default_policy()
    state, plan = _borrowed(data_dir, 6, policy)
    render = state.workload("render")
    assert render is not None and render.desired_replicas == 0
    assert render.queue_depth.usable and (render.queue_depth.value or 0) > 0
    assert [(a.target, a.type) for a in plan.actions] == [
        ("burst-llm", "scale_workload"),
        ("render", "scale_workload"),
    ]
    down, up = plan.actions
    assert isinstance(down, ScaleWorkload) and down.replicas == 0
    assert isinstance(up, ScaleWorkload) and up.replicas == 1
    judgement = judge(plan, state, policy, History(), now=state.observed_at)
    assert [(v.decision, v.rule_ids) for v in judgement.verdicts] == [
        ("allow", ("pool.priority_preemption",)),
        ("allow", ("policy.within_limits",)),
    ]


def test_a_policy_that_lends_at_once_needs_no_preemption(data_dir: Path) -> None:
    policy = load_policy(DATA / "lend-at-once.yaml")
    state, plan = _borrowed(data_dir, 6, policy)
    judgement = judge(plan, state, policy, History(), now=state.observed_at)
    assert [(v.decision, v.rule_ids) for v in judgement.verdicts] == [
        ("allow", ("policy.within_limits",)),
        ("allow", ("policy.within_limits",)),
    ]


def test_nobody_renders_so_nothing_is_taken_back(data_dir: Path) -> None:
    state, plan = _borrowed(data_dir, 0, load_default_policy())
    render = state.workload("render")
    assert render is not None and render.queue_depth.value == 0
    assert not any(a.target == "burst-llm" and isinstance(a, ScaleWorkload) for a in plan.actions)


def test_empty_memory_means_no_pool_counts_as_idle_yet(data_dir: Path) -> None:
    with open_runtime(data_dir, BORROWED) as runtime:
        state = runtime.ctx.cluster.observe()
    policy = load_default_policy()
    settings = RulesSettings.from_policy(policy)
    signals, _ = assess(state, Memory(), settings.assess, policy)
    assert all(w.idle_for_s in (None, 0.0) for w in signals.workloads)
