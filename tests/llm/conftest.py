"""Fixtures of the LLM planner tests: a homelab observation with something to decide, its
signals and policy, and a planner pointed at a scripted server with short, test-sized limits."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent.daemon.report import TickReport
from agent.daemon.runtime import Runtime
from agent.planners.llm.planner import LLMPlanner
from agent.planners.llm.settings import LLMSettings, OutputMode
from agent.planners.rule_settings import RulesSettings
from agent.signals.assess import assess
from agent.signals.memory import Memory
from agent.signals.model import Signals
from lab.scripted_server import Reply, ScriptedServer
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.faults import MpsDoubleCount
from lab.sim.scenario import Scenario
from policies.loader import load_default_policy
from policies.model import Policy
from tools.model import ClusterState


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from each test, never from the developer's shell."""
    for name in ("BASE_URL", "MODEL", "API_KEY", "OUTPUT", "TIMEOUT_S", "DEADLINE_S", "MAX_STEPS"):
        monkeypatch.delenv(f"STEWARD_LLM_{name}", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture(scope="session")
def policy() -> Policy:
    return load_default_policy()


@pytest.fixture(scope="session")
def busy(policy: Policy) -> tuple[ClusterState, Signals]:
    """The homelab two minutes into requests for burst-llm, which has no replica."""
    scenario = Scenario(demand=(PoissonDemand(target="burst-llm", rate_per_min=30),))
    cluster = SimCluster.from_scenario(scenario)
    cluster.advance(120)
    state = cluster.observe()
    signals, _ = assess(state, Memory(), RulesSettings.from_policy(policy).assess, policy)
    assert signals.findings, "the scenario must leave something to decide"
    return state, signals


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


PlannerFactory = Callable[..., LLMPlanner]

ANOMALY = Scenario(
    name="mps-double-count-and-burst",
    demand=(PoissonDemand(target="burst-llm", rate_per_min=30),),
    faults=(MpsDoubleCount(node="ws-1"),),
)
"""Requests for burst-llm (a routine scale-up, decided in the tick) while ws-1's scheduler
counts its MPS-shared card twice (an anomaly no rule fixes: a question for the model)."""


def answered(runtime: Runtime, interval_s: float = 15.0) -> TickReport:
    """One tick, then the model's answer to what it asked (if anything) judged on the next."""
    first = runtime.tick(interval_s)
    deliberations = runtime.ctx.deliberations
    assert deliberations is not None, "a model planner deliberates beside the loop"
    waited = time.monotonic()
    while deliberations.busy and time.monotonic() - waited < 600:
        time.sleep(0.01)
    runtime.tick(interval_s)
    return first


@pytest.fixture
def make(server: ScriptedServer, policy: Policy) -> PlannerFactory:
    """A planner for `server`: `make(*replies, output="tools", deadline_s=5.0, ...)`."""

    def build(*replies: Reply, output: OutputMode = "tools", **limits: Any) -> LLMPlanner:
        server.add(*replies)
        settings = LLMSettings(
            base_url=server.base_url,
            model="scripted-model",
            output=output,
            timeout_s=limits.pop("timeout_s", 2.0),
            deadline_s=limits.pop("deadline_s", 5.0),
            **limits,
        )
        return LLMPlanner(settings, policy=policy, sleep=_short)

    return build


def _short(seconds: float) -> None:
    """Backoff sleeps are real but capped: the tests measure deadlines in wall time."""
    time.sleep(min(max(seconds, 0.0), 0.05))
