"""Every key of steward.yaml from the environment, unknown STEWARD_* variables named, and
`steward config show` saying where each value came from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent.daemon.config import ConfigError, StewardConfig, load_config
from agent.daemon.envvars import key_variables, leaves

ROOT = Path(__file__).resolve().parents[2]


def steward(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", **env},
    )


def test_every_key_has_a_variable() -> None:
    names = key_variables(StewardConfig)
    for path in leaves(StewardConfig):
        assert "STEWARD_" + "__".join(path).upper() in names, path
    assert names["STEWARD_METRICS__PROMETHEUS__URL"] == ("metrics", "prometheus", "url")
    # the single-underscore spelling the docs have always used still works
    assert names["STEWARD_SLACK_CHANNEL"] == ("slack", "channel")
    assert names["STEWARD_METRICS_PROMETHEUS_URL"] == ("metrics", "prometheus", "url")


@pytest.mark.parametrize(
    "name",
    ["STEWARD_METRICS__PROMETHEUS__URL", "STEWARD_METRICS_PROMETHEUS_URL"],
)
def test_a_nested_key_from_the_environment(name: str, tmp_path: Path) -> None:
    path = tmp_path / "steward.yaml"
    path.write_text("metrics:\n  prometheus:\n    url: http://file:9090\n    window: 2m\n")
    config = load_config(path, env={name: "http://prometheus.monitoring:9090"})
    assert config.metrics.prometheus.url == "http://prometheus.monitoring:9090"
    assert config.metrics.prometheus.window == "2m"  # the rest of the file's section stays
    assert config.origin("metrics.prometheus.url") == ("environment", name)
    assert config.origin("metrics.prometheus.window") == ("file", str(path))
    assert config.origin("metrics.prometheus.timeout_s") == ("default", "")


def test_leader_election_from_the_environment() -> None:
    env = {
        "STEWARD_KUBERNETES__LEADER_ELECTION__LEASE_DURATION_S": "30",
        "STEWARD_KUBERNETES__LEADER_ELECTION__RENEW_DEADLINE_S": "20",
        "STEWARD_KUBERNETES_LEADER_ELECTION_LEASE": "gpu-steward",
    }
    election = load_config(None, env=env).kubernetes.leader_election
    assert (election.lease_duration_s, election.renew_deadline_s) == (30, 20.0)
    assert election.lease == "gpu-steward"


def test_a_bad_nested_variable_is_named() -> None:
    env = {"STEWARD_KUBERNETES__LEADER_ELECTION__RETRY_PERIOD_S": "30"}
    with pytest.raises(ConfigError) as caught:
        load_config(None, env=env)
    assert str(caught.value).startswith(
        "STEWARD_KUBERNETES__LEADER_ELECTION__RETRY_PERIOD_S: must be below renew_deadline_s"
    )


def test_a_section_as_json_then_a_key_inside_it() -> None:
    env = {
        "STEWARD_METRICS": '{"sources": ["prometheus"], "prometheus": {"url": "http://a:1"}}',
        "STEWARD_METRICS__PROMETHEUS__URL": "http://b:2",
    }
    config = load_config(None, env=env)
    assert config.metrics.sources == ("prometheus",)
    assert config.metrics.prometheus.url == "http://b:2"  # the deeper variable wins
    assert config.origin("metrics.sources") == ("environment", "STEWARD_METRICS")


def test_an_unknown_variable_is_named_with_the_nearest_spelling() -> None:
    env = {"STEWARD_SLACK_CHANEL": "C1", "STEWARD_AUDIT_KEY": "k", "STEWARD_NAMESPACE": "gpu"}
    warnings = load_config(None, env=env).warnings
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("STEWARD_SLACK_CHANEL is not a steward setting")
    assert "did you mean STEWARD_SLACK_CHANNEL?" in warnings[0]


def test_config_show_json_names_each_source(tmp_path: Path) -> None:
    path = tmp_path / "steward.yaml"
    path.write_text("interval_s: 30\n")
    done = steward(
        "config",
        "show",
        "--json",
        "--planner",
        "llm",
        env={
            "STEWARD_CONFIG": str(path),
            "STEWARD_METRICS__PROMETHEUS__URL": "http://prometheus.monitoring:9090",
            "STEWARD_PROMETHEUS_URL": "http://typo:9090",
        },
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["config"]["metrics"]["prometheus"]["url"] == "http://prometheus.monitoring:9090"
    sources = doc["sources"]
    assert sources["metrics.prometheus.url"] == {
        "source": "environment",
        "from": "STEWARD_METRICS__PROMETHEUS__URL",
    }
    assert sources["interval_s"] == {"source": "file", "from": str(path)}
    assert sources["planner"] == {"source": "flag", "from": "--planner"}
    assert sources["backend"] == {"source": "default"}
    assert "warning: STEWARD_PROMETHEUS_URL is not a steward setting" in done.stderr
    assert "STEWARD_PROMETHEUS_URL" not in done.stdout  # stdout holds the JSON alone


def test_config_show_text_marks_each_line() -> None:
    done = steward("config", "show", env={"STEWARD_SLACK_CHANNEL": "C0GPU"})
    assert done.returncode == 0, done.stderr
    assert "  channel: C0GPU  # environment STEWARD_SLACK_CHANNEL" in done.stdout
    assert "backend: sim  # default" in done.stdout
