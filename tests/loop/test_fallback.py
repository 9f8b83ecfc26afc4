"""The agent never depends on the capacity it manages: with the LLM endpoint down, rules decide.

A real LLM planner pointed at a port nothing listens on fails (PlannerFailed); the loop runs
the rules planner instead, records the fallback and its reason, and counts it in /metrics.
"""

from __future__ import annotations

import socket
from pathlib import Path

from agent.audit import Fallback, Intent
from agent.daemon.runtime import Runtime
from agent.planners.llm import LLMPlanner
from agent.planners.llm_settings import LLMSettings
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
        reports = [runtime.tick(15.0) for _ in range(12)]
        fallbacks = [r.payload for r in runtime.ctx.audit.records(kind="fallback")]
        intents = [r.payload for r in runtime.ctx.audit.records(kind="intent")]
        metric = runtime.ctx.telemetry.registry.get_sample_value
        counted = metric("steward_planner_fallbacks_total", {"planner": "llm"})
        requests = metric("steward_planner_requests_total", {"planner": "llm"})
    decided = [r for r in reports if r.decided]
    asked = [r for r in reports if r.findings]  # a planner is asked only when there is a finding
    assert decided and decided[0].executed == 1
    assert int(counted or 0) == len(asked)  # every one of them decided by the rules
    assert all(isinstance(f, Fallback) for f in fallbacks)
    first = fallbacks[0]
    assert isinstance(first, Fallback)
    assert first.from_planner == "llm" and first.to_planner == "rules"
    assert first.decision_id == decided[0].decision_id and "could not connect" in first.reason
    # The endpoint is asked once, then left alone for five minutes while the rules decide.
    assert llm.last_report is not None and requests == llm.last_report.requests
    assert all("not asked until" in f.reason for f in fallbacks[1:] if isinstance(f, Fallback))
    assert {f.decision_id for f in fallbacks if isinstance(f, Fallback)} == {
        i.decision_id for i in intents if isinstance(i, Intent)
    }
    assert all(isinstance(i, Intent) and i.planner == "rules" for i in intents)


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
        # The loop hands the planner its read-only look-up of what was done lately.
        assert llm.history is not None and llm.history().executed == ()
    assert llm.last_report is None
