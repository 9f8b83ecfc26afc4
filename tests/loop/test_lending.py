"""Pool priorities: the render pool takes its cards back from burst when renders queue.

The simulator's render workload has no request queue (a ready render replica is simply busy),
so this reads an observation of the simulated cluster as a backend with a render job queue
reports it: the same state, with render's queue depth measured. Whether the cards may be taken
from a pool that is still busy is the policy's call: the default policy keeps a busy burst pool
(idle_before_zero, its SLO); a policy without those lets priority decide.
"""

from __future__ import annotations

from pathlib import Path

from agent.assess import assess
from agent.planners.rules import RulesPlanner, RulesSettings
from agent.state import Memory
from policies.engine import judge
from policies.history import History
from policies.loader import load_default_policy, load_policy
from tests.loop.conftest import DATA, open_runtime
from tools.actions import PlaceReplica, ScaleWorkload
from tools.model import ClusterState, Metric
from tools.sim.demand import BurstDemand
from tools.sim.scenario import Scenario

BORROWED = Scenario(
    name="borrowed",
    replicas={"render": 0, "burst-llm": 0},
    demand=(BurstDemand(target="burst-llm", rate_per_min=120, at_s=0, duration_s=3600),),
)


def _with_render_queue(state: ClusterState, depth: float) -> ClusterState:
    render = state.workload("render")
    assert render is not None
    queued = render.model_copy(
        update={
            "queue_depth": Metric.fresh(depth, state.observed_at, "render-queue"),
            "queue_wait_s": Metric.fresh(20.0, state.observed_at, "render-queue"),
        }
    )
    workloads = tuple(queued if w.name == "render" else w for w in state.workloads)
    return ClusterState.model_validate({**state.model_dump(), "workloads": workloads})


def test_renders_queue_and_burst_gives_the_cards_back(data_dir: Path) -> None:
    with open_runtime(data_dir, BORROWED) as runtime:
        for _ in range(16):
            runtime.tick(15.0)
        state = runtime.ctx.cluster.observe()
        memory = runtime.memory
    burst = state.workload("burst-llm")
    assert burst is not None and burst.desired_replicas == 2
    policy = load_policy(DATA / "lend-at-once.yaml")
    settings = RulesSettings.from_policy(policy)
    queued = _with_render_queue(state, 3)
    signals, _ = assess(queued, memory, settings.assess, policy)
    plan = RulesPlanner(settings).plan(queued, signals)
    assert plan.actions[0] == ScaleWorkload(
        workload="burst-llm", replicas=0, reason=plan.actions[0].reason
    )
    assert isinstance(plan.actions[1], PlaceReplica)
    assert (plan.actions[1].workload, plan.actions[1].node) == ("render", "render-1")
    judgement = judge(plan, queued, policy, History(), now=queued.observed_at)
    assert [v.decision for v in judgement.verdicts] == ["allow", "allow"]


def test_the_default_policy_keeps_the_cards_of_a_busy_burst_pool(data_dir: Path) -> None:
    with open_runtime(data_dir, BORROWED) as runtime:
        for _ in range(16):
            runtime.tick(15.0)
        state = runtime.ctx.cluster.observe()
        memory = runtime.memory
    policy = load_default_policy()
    settings = RulesSettings.from_policy(policy)
    queued = _with_render_queue(state, 3)
    signals, _ = assess(queued, memory, settings.assess, policy)
    plan = RulesPlanner(settings).plan(queued, signals)
    judgement = judge(plan, queued, policy, History(), now=queued.observed_at)
    scale_down, place = judgement.verdicts
    assert scale_down.decision == "deny" and "pool.idle_before_zero" in scale_down.rule_ids
    assert place.decision == "deny" and place.rule_ids == ("budget.total_cards",)


def test_nobody_renders_so_nothing_is_taken_back(data_dir: Path) -> None:
    with open_runtime(data_dir, BORROWED) as runtime:
        for _ in range(16):
            runtime.tick(15.0)
        state = runtime.ctx.cluster.observe()
        memory = runtime.memory
    policy = load_default_policy()
    settings = RulesSettings.from_policy(policy)
    signals, _ = assess(_with_render_queue(state, 0), memory, settings.assess, policy)
    plan = RulesPlanner(settings).plan(state, signals)
    assert not any(a.target == "burst-llm" and isinstance(a, ScaleWorkload) for a in plan.actions)


def test_empty_memory_means_no_pool_counts_as_idle_yet(data_dir: Path) -> None:
    with open_runtime(data_dir, BORROWED) as runtime:
        state = runtime.ctx.cluster.observe()
    policy = load_default_policy()
    settings = RulesSettings.from_policy(policy)
    signals, _ = assess(state, Memory(), settings.assess, policy)
    assert all(w.idle_for_s in (None, 0.0) for w in signals.workloads)
