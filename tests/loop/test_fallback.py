"""The agent never depends on the capacity it manages: with the LLM endpoint down, rules decide.

A real LLM planner pointed at a port nothing listens on is never asked inside a tick: the rules
decide every routine scaling there. A question of judgment (ws-1's card counted twice) is
deliberated beside the loop; that fails (PlannerFailed), the rules decide it instead, and the
fallback and its reason are recorded and counted in /metrics.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from agent.audit import DeliberationRecord, Fallback, Intent
from agent.daemon.runtime import Runtime
from agent.planners.llm.planner import LLMPlanner
from agent.planners.llm.settings import LLMSettings
from lab.sim.backend import SimCluster
from lab.sim.faults import MpsDoubleCount
from policies.loader import load_default_policy
from tests.loop.test_scale_up import SPIKE


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
    sim = SimCluster.open(data_dir, SPIKE.model_copy(update={"faults": (MpsDoubleCount(),)}))
    with Runtime.open(data_dir, sim, policy, planner=llm) as runtime:
        runtime.start()
        reports = []
        for _ in range(12):
            reports.append(runtime.tick(15.0))
            while runtime.ctx.deliberations is not None and runtime.ctx.deliberations.busy:
                time.sleep(0.01)
        fallbacks = [r.payload for r in runtime.ctx.audit.records(kind="fallback")]
        asked = [r.payload for r in runtime.ctx.audit.records(kind="deliberation")]
        intents = [r.payload for r in runtime.ctx.audit.records(kind="intent")]
        metric = runtime.ctx.telemetry.registry.get_sample_value
        counted = metric("steward_planner_fallbacks_total", {"planner": "llm"})
    decided = [r for r in reports if r.decided]
    assert decided and decided[0].executed == 1  # the spike's scale-up, in its own tick
    assert all(isinstance(i, Intent) and i.planner == "rules" for i in intents)
    # The anomaly was asked once (it stands, it is not asked again), and fell back.
    (deliberation,) = asked
    assert isinstance(deliberation, DeliberationRecord)
    assert deliberation.question == "anomaly" and deliberation.outcome == "fallback"
    (first,) = fallbacks
    assert isinstance(first, Fallback)
    assert first.from_planner == "llm" and first.to_planner == "rules"
    assert first.decision_id == deliberation.decision_id and "could not connect" in first.reason
    assert int(counted or 0) == 1


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
        # ... and its own decision log, for the search_audit and explain_decision look-ups.
        assert llm.audit is not None and llm.audit() is runtime.ctx.audit
    assert llm.last_report is None
