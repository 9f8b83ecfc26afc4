"""An LLM endpoint that does not answer is found at start, once, not decision by decision: one
warning with the cause, the rules planner decides meanwhile, and the run's summary and /metrics
count the fallbacks."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import structlog
from structlog.testing import capture_logs

from agent.cli.loop import check_planner
from agent.daemon.compose import open_backend, planner_for
from agent.daemon.config import load_config
from agent.daemon.runtime import Runtime
from agent.support.telemetry import Telemetry
from policies.loader import load_default_policy

ROOT = Path(__file__).resolve().parents[2]
STARTUP = "planner's endpoint does not answer"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: connections are refused


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "OPENAI_"))}
    url = f"http://127.0.0.1:{closed_port()}/v1"
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", "--planner", "llm", "--speed", "0", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
        env={**keep, "PYTHONPATH": str(ROOT), "STEWARD_LLM_BASE_URL": url},
    )


def test_one_startup_warning_and_the_fallbacks_in_the_summary(tmp_path: Path) -> None:
    # The whole built-in day: the rules plan every tick, and each question of judgment it raises
    # (a rotation among them) falls back when the endpoint refuses it.
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if STARTUP in line]
    assert len(warnings) == 1, done.stderr
    assert "could not connect" in warnings[0]
    summary = [
        line for line in done.stdout.splitlines() if "fallback(s) to the rules planner" in line
    ]
    assert summary, done.stdout
    count = int(summary[0].split()[0])
    ticks = int(summary[0].split(" in ")[1].split()[0])
    assert 0 < count < ticks
    assert "could not connect" in summary[0]
    # Only the questions asked the endpoint: no tick did on its own.
    asked = [line for line in done.stderr.splitlines() if '"failure": "http' in line]
    assert len(asked) <= 1, asked


def test_the_json_summary_counts_them(tmp_path: Path) -> None:
    done = run(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["fallbacks"] > 0 and "could not connect" in doc["fallback_reason"]


def test_metrics_count_what_the_summary_counts(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("STEWARD_LLM_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    structlog.reset_defaults()  # another test may have bound the log to a closed stderr
    policy = load_default_policy()
    telemetry = Telemetry()
    data_dir = tmp_path / "steward"
    parts = open_backend(load_config(None, env={}), data_dir).parts  # `steward run`'s day
    with Runtime.open(
        data_dir, parts, policy, planner=planner_for("llm", policy), telemetry=telemetry
    ) as runtime:
        runtime.start()
        with capture_logs() as logs:
            check_planner(runtime)
        assert [e["log_level"] for e in logs] == ["warning"]
        summary = runtime.run(480, 15.0, 0)
        scraped = telemetry.registry.get_sample_value(
            "steward_planner_fallbacks_total", {"planner": "llm"}
        )
    assert summary.fallbacks > 0 and scraped == summary.fallbacks
