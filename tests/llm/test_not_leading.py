"""A replica that does not lead asks its model nothing: a lead lost between the start of a tick
and its plan ends the tick without a model call (its plan could not run anyway: the fence)."""

from __future__ import annotations

import time
from pathlib import Path

import structlog

from agent.daemon.runtime import Runtime
from agent.planners.llm.planner import LLMPlanner
from agent.planners.llm.settings import LLMSettings
from lab.scripted_server import ScriptedServer, submit
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from policies.model import Policy

BURST = Scenario(demand=(PoissonDemand(target="burst-llm", rate_per_min=30),))


class LosesTheLead:
    """Leads for its first `calls` questions (the tick's own check), then no more."""

    identity = "steward-0"

    def __init__(self, calls: int) -> None:
        self.calls = calls

    def leading(self) -> bool:
        self.calls -= 1
        return self.calls >= 0

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def describe(self) -> dict[str, object]:
        return {"identity": self.identity, "leading": self.calls > 0, "election": "test"}


def test_no_model_call_once_the_lead_is_lost(
    tmp_path: Path, server: ScriptedServer, policy: Policy
) -> None:
    structlog.reset_defaults()  # an earlier CliRunner test may have left it on a closed stderr
    server.add(submit([{"type": "scale_workload", "workload": "burst-llm", "replicas": 1}]))
    settings = LLMSettings(base_url=server.base_url, model="scripted-model", deadline_s=5.0)
    planner = LLMPlanner(settings, policy=policy, sleep=lambda s: time.sleep(min(s, 0.05)))
    sim = SimCluster.open(tmp_path, BURST)
    sim.advance(120)
    leadership = LosesTheLead(calls=1)
    with Runtime.open(tmp_path, sim, policy, planner=planner, leadership=leadership) as runtime:
        runtime.start()
        report = runtime.tick(15.0)

    assert not report.standby  # the tick began as the leader's ...
    assert server.completions == []  # ... and asked the model nothing once the lead was gone
    assert report.executed == 0
