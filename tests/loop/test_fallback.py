"""The agent never depends on the capacity it manages: with the LLM endpoint down, rules decide.

A real LLM planner pointed at a port nothing listens on fails (PlannerFailed); the loop runs
the rules planner instead, records the fallback and its reason, and counts it in /metrics.
"""

from __future__ import annotations

import socket
from pathlib import Path

from agent.audit import Fallback, Intent
from agent.planners.llm import LLMPlanner
from agent.planners.llm_settings import LLMSettings
from agent.runtime import Runtime
from policies.loader import load_default_policy
from tests.loop.test_scale_up import SPIKE
from tools.backends.sim import SimCluster


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_llm_endpoint_down_rules_decide_and_the_log_says_why(data_dir: Path) -> None:
    settings = LLMSettings(
        base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="absent", timeout_s=0.5,
        deadline_s=1.0,
    )  # fmt: skip
    policy = load_default_policy()
    llm = LLMPlanner(settings, policy=policy)
    sim = SimCluster.open(data_dir, SPIKE)
    with Runtime.open(data_dir, sim, policy, planner=llm) as runtime:
        runtime.start()
        reports = [runtime.tick(15.0) for _ in range(6)]
        fallbacks = runtime.ctx.audit.records(kind="fallback")
        intents = runtime.ctx.audit.records(kind="intent")
        counted = runtime.ctx.telemetry.registry.get_sample_value(
            "steward_planner_fallbacks_total", {"planner": "llm"}
        )
        requests = runtime.ctx.telemetry.registry.get_sample_value(
            "steward_planner_requests_total", {"planner": "llm"}
        )
    decided = [r for r in reports if r.decided]
    asked = [r for r in reports if r.findings]  # the LLM is asked only when there is a finding
    assert decided and decided[0].executed == 1
    assert len(fallbacks) == len(asked) == int(counted or 0)
    assert (requests or 0) >= len(asked)  # the planner's own report is counted in /metrics
    fallback = fallbacks[0].payload
    assert isinstance(fallback, Fallback)
    assert fallback.from_planner == "llm" and fallback.to_planner == "rules"
    assert fallback.reason and fallback.decision_id == decided[0].decision_id
    intent = intents[0].payload
    assert isinstance(intent, Intent) and intent.planner == "rules"


def test_no_decision_no_llm_call(data_dir: Path) -> None:
    settings = LLMSettings(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="absent")
    policy = load_default_policy()
    sim = SimCluster.open(data_dir, SPIKE.model_copy(update={"demand": ()}))
    llm = LLMPlanner(settings, policy=policy)
    with Runtime.open(data_dir, sim, policy, planner=llm) as runtime:
        runtime.start()
        for _ in range(4):
            runtime.tick(15.0)
        assert runtime.ctx.audit.records(kind="fallback") == []
    assert llm.last_report is None
