"""Shared set-up of the deliberation tests: the homelab in cluster mode under chat demand that
favours split (a rotation to deliberate), and an LLM planner aimed at a model stub that speaks
the OpenAI chat-completions protocol over HTTP (lab/scripted_server.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog

from agent.audit import AuditLog, DeliberationRecord
from agent.daemon.runtime import Runtime
from agent.planners.llm.planner import LLMPlanner
from agent.planners.llm.settings import LLMSettings
from lab.scripted_server import ScriptedServer
from lab.sim.scenario import Scenario
from policies.loader import load_default_policy

SCENARIO: dict[str, Any] = {
    "name": "split-favoured-at-night",
    "description": "cluster mode at night under chat demand that saturates it",
    "profile": "homelab",
    "seed": 7,
    "start": "2026-03-02T00:00:00Z",
    "duration_s": 14400,
    "mode": "cluster",
    "demand": [
        {
            "kind": "burst",
            "target": "gx10",
            "rate_per_min": 30,
            "at_s": 0,
            "duration_s": 1900,
            "input_tokens": 1500,
            "output_tokens": 300,
        }
    ],
}


@pytest.fixture(autouse=True)
def _quiet_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    structlog.reset_defaults()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    for name in ("BASE_URL", "MODEL", "API_KEY", "OUTPUT", "TIMEOUT_S", "DEADLINE_S"):
        monkeypatch.delenv(f"STEWARD_LLM_{name}", raising=False)


def scenario() -> Scenario:
    return Scenario.model_validate(SCENARIO)


def planner(server: ScriptedServer, deadline_s: float = 10.0) -> LLMPlanner:
    settings = LLMSettings(
        base_url=server.base_url,
        model="scripted-model",
        timeout_s=deadline_s,
        deadline_s=deadline_s,
    )
    return LLMPlanner(
        settings, policy=load_default_policy(), sleep=lambda s: time.sleep(min(s, 0.05))
    )


def tick_until(
    runtime: Runtime, done: Callable[[], bool], limit: int = 400, interval_s: float = 15.0
) -> int:
    """Tick (waiting for any deliberation in flight to answer first) until `done()`."""
    for n in range(limit):
        if done():
            return n
        runtime.tick(interval_s)
        deliberations = runtime.ctx.deliberations
        assert deliberations is not None
        waited = time.monotonic()
        while deliberations.busy and time.monotonic() - waited < 30:
            time.sleep(0.01)
    raise AssertionError(f"not done after {limit} ticks")


def deliberation_records(data_dir: Path) -> list[DeliberationRecord]:
    log = AuditLog.open(data_dir, readonly=True)
    try:
        return [
            r.payload
            for r in log.records(kind="deliberation")
            if isinstance(r.payload, DeliberationRecord)
        ]
    finally:
        log.close()
