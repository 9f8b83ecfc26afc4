"""An HTTP 200 that breaks the protocol, or an answer that never quite arrives, is one failed
decision — never an exception out of the planner, never a decision held past its deadline.

Before: a null message raised `AttributeError: 'NoneType' object has no attribute
'tool_calls'` out of the planner (each restart crashed again at plan), and an answer trickling
in a byte at a time held a decision for 303 s against its 20 s deadline, then was reported as
"could not connect".
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest
import structlog

from agent.audit import Fallback
from agent.daemon.runtime import Runtime
from agent.planners.errors import PlannerFailed
from agent.planners.llm.planner import LLMPlanner
from agent.planners.llm.settings import LLMSettings
from agent.signals.model import Signals
from lab.scripted_server import BAD_SHAPES, ScriptedServer, bad, hang, submit, trickle
from lab.sim.backend import SimCluster
from policies.model import Policy
from tests.llm.conftest import ANOMALY, PlannerFactory, answered
from tools.model import ClusterState

SCALE = {"type": "scale_workload", "workload": "burst-llm", "replicas": 1}
WHAT_IS_WRONG = {
    "null_message": "choices.0.message",
    "choices_as_string": "choices",
    "array_body": "the body",
    "arguments_as_object": "arguments",
    "missing_function_name": "name",
    "negative_tokens": "prompt_tokens",
    "string_tokens": "completion_tokens",
    "empty_choices": "choices",
}


@pytest.mark.parametrize("shape", sorted(BAD_SHAPES))
def test_a_malformed_answer_is_a_planner_failure_naming_the_field(
    make: PlannerFactory, busy: tuple[ClusterState, Signals], shape: str
) -> None:
    planner = make(bad(shape))

    with pytest.raises(PlannerFailed) as failed:
        planner.plan(*busy)

    reason = failed.value.reason
    assert "breaks the OpenAI chat protocol" in reason
    assert WHAT_IS_WRONG[shape] in reason
    assert planner.last_report is not None and planner.last_report.failure == reason


def test_an_answer_trickling_in_is_cut_at_the_deadline(
    make: PlannerFactory, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(trickle(submit([SCALE]), every_s=0.05), timeout_s=10.0, deadline_s=1.5)
    started = time.monotonic()

    with pytest.raises(PlannerFailed) as failed:
        planner.plan(*busy)

    elapsed = time.monotonic() - started
    assert elapsed < 2.0
    reason = failed.value.reason
    assert "deadline of 1.5 s" in reason and "still arriving" in reason
    assert "could not connect" not in reason


def test_each_slow_request_is_retried_within_the_one_deadline(
    make: PlannerFactory, server: ScriptedServer, busy: tuple[ClusterState, Signals]
) -> None:
    """Requests bounded at 0.5 s each, the decision at 1.6 s: a few tries, then the deadline."""
    slow = trickle(submit([SCALE]), every_s=0.05)
    planner = make(slow, slow, slow, slow, timeout_s=0.5, deadline_s=1.6)
    started = time.monotonic()

    with pytest.raises(PlannerFailed) as failed:
        planner.plan(*busy)

    assert time.monotonic() - started < 2.1
    assert len(server.completions) >= 2
    assert "still arriving" in failed.value.reason


def test_a_hanging_server_does_not_hold_the_decision(
    make: PlannerFactory, busy: tuple[ClusterState, Signals]
) -> None:
    planner = make(hang(), timeout_s=30.0, deadline_s=1.0)
    started = time.monotonic()

    with pytest.raises(PlannerFailed) as failed:
        planner.plan(*busy)

    assert time.monotonic() - started < 1.5
    # Either the planner's own bound fired at the deadline ("timed out at the deadline of 1 s"),
    # or, on a loaded machine, the HTTP client's timeout did first ("timed out (1 request(s) in
    # 1.0 s; deadline 1 s)"): both name the deadline that ended the wait.
    assert re.search(r"deadline (of )?1 s", failed.value.reason), failed.value.reason


@pytest.fixture
def _quiet_logs() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@pytest.mark.usefixtures("_quiet_logs")
def test_in_the_loop_the_rules_decide_after_a_null_message(
    tmp_path: Path, server: ScriptedServer, policy: Policy
) -> None:
    server.add(bad("null_message"))
    sim = SimCluster.open(tmp_path, ANOMALY)
    settings = LLMSettings(base_url=server.base_url, model="scripted-model", deadline_s=5.0)
    planner = LLMPlanner(settings, policy=policy)
    with Runtime.open(tmp_path, sim, policy, planner=planner) as runtime:
        runtime.start()
        report = answered(runtime)  # the anomaly's deliberation fails; the scale-up never waited
        fallbacks = runtime.ctx.audit.records(kind="fallback")

    assert report.decided and report.executed >= 1
    fallback = fallbacks[0].payload
    assert isinstance(fallback, Fallback)
    assert "choices.0.message" in fallback.reason
