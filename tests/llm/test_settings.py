"""The LLM planner's settings: no endpoint nobody chose, and timeouts that fit a local server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.planners.llm.planner import LLMPlanner, make_planner
from agent.planners.llm.settings import LLMSettings, is_local
from policies.loader import DEFAULT_POLICY, load_policy
from tools.errors import InvalidInput

ENDPOINT_VARIABLES = ("STEWARD_LLM_BASE_URL", "OPENAI_BASE_URL")


@pytest.fixture(autouse=True)
def _no_endpoint_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*ENDPOINT_VARIABLES, "STEWARD_LLM_TIMEOUT_S", "STEWARD_LLM_DEADLINE_S"):
        monkeypatch.delenv(name, raising=False)


def test_without_an_endpoint_the_planner_refuses_to_start_and_names_the_settings() -> None:
    with pytest.raises(InvalidInput) as refused:
        make_planner(load_policy(DEFAULT_POLICY))
    message = str(refused.value)
    assert "llm.base_url" in message and "STEWARD_LLM_BASE_URL" in message
    with pytest.raises(InvalidInput):
        LLMPlanner(LLMSettings())  # not by the constructor either


def test_steward_yaml_reaches_the_planner() -> None:
    planner = make_planner(
        load_policy(DEFAULT_POLICY),
        configured={"base_url": "https://llm.example.com/v1", "model": "m", "timeout_s": 4.0},
    )
    assert planner.settings.base_url == "https://llm.example.com/v1"
    assert planner.settings.model == "m" and planner.settings.timeout_s == 4.0


def test_a_bad_setting_names_its_variable() -> None:
    with pytest.raises(InvalidInput, match="STEWARD_LLM_TIMEOUT_S"):
        make_planner(
            load_policy(DEFAULT_POLICY), configured={"base_url": "http://x/v1", "timeout_s": -1}
        )


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8431/v1", True),
        ("http://localhost:8080/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://10.1.2.3/v1", True),
        ("http://llm-server:8000/v1", True),  # a cluster Service's short name
        ("http://gx10.local:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://8.8.8.8/v1", False),
        (None, False),
    ],
)
def test_which_endpoints_are_local(url: str | None, local: bool) -> None:
    assert is_local(url) is local


def test_a_local_endpoint_gets_time_for_its_answer_and_a_hosted_one_the_defaults() -> None:
    local = LLMSettings(base_url="http://127.0.0.1:8431/v1")
    assert (local.timeout_s, local.deadline_s) == (120.0, 240.0)  # 600 tokens at 5 tok/s
    short = LLMSettings(base_url="http://127.0.0.1:8431/v1", max_tokens=64)
    assert short.timeout_s == 30.0  # never below 30 s
    hosted = LLMSettings(base_url="https://api.openai.com/v1")
    assert (hosted.timeout_s, hosted.deadline_s) == (10.0, 20.0)


def test_what_is_set_wins_over_the_scaling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEWARD_LLM_BASE_URL", "http://localhost:8080/v1")
    monkeypatch.setenv("STEWARD_LLM_TIMEOUT_S", "7")
    settings = LLMSettings()
    assert (settings.timeout_s, settings.deadline_s) == (7.0, 14.0)
    assert LLMSettings(deadline_s=50).deadline_s == 50


def test_steward_run_with_the_llm_planner_and_no_endpoint_exits_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ENDPOINT_VARIABLES}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli",
            "run",
            "--planner",
            "llm",
            "--ticks",
            "1",
            "--data-dir",
            str(tmp_path / "d"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "no endpoint is set" in done.stderr and "Traceback" not in done.stderr
