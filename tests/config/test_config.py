"""steward.yaml: read, laid under the environment, checked with FILE:LINE:COL, shown masked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app, take_config_option
from agent.daemon.config import CONFIG_ENV, ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
GOOD = """\
backend: sim
planner: rules
interval_s: 30
listen:
  host: 0.0.0.0
  port: 9400
metrics:
  sources: []
slack:
  enabled: false
  channel: "#gpu"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "steward.yaml"
    path.write_text(text)
    return path


def test_defaults_without_a_file() -> None:
    config = load_config(None, env={})
    assert config.backend == "sim" and config.planner == "rules"
    assert config.interval_s == 15.0 and config.listen.port is None
    assert config.source == "(defaults)"


def test_a_file_with_the_environment_over_it(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    env = {"STEWARD_INTERVAL_S": "5", "STEWARD_SLACK_CHANNEL": "#ops", "STEWARD_LISTEN_PORT": "0"}
    config = load_config(path, env=env)
    assert config.interval_s == 5.0  # the variable wins over the file
    assert config.slack.channel == "#ops"
    assert config.listen.host == "0.0.0.0" and config.listen.port == 0
    assert "STEWARD_INTERVAL_S" in config.source and str(path) in config.source


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bakend: sim\n", ":1:1: unknown key 'bakend' in the top level; allowed keys: audit"),
        ("backend: nomad\n", ":1:10: backend: Input should be 'sim' or 'kubernetes'"),
        ("listen:\n  port: 99999\n", ":2:9: listen.port: Input should be less than or equal"),
        ("metrics:\n  prometheus:\n    timeout: 3\n", ":3:5: unknown key 'timeout'"),
        ("interval_s: .inf\n", ":1:13: interval_s:"),
        ("backend: [sim\n", ":2:1: YAML syntax"),
        ("- a list\n", ":1:1: steward.yaml is a mapping of keys"),
    ],
)
def test_a_broken_file_names_the_place(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert str(path) + expected in str(caught.value), str(caught.value)


def test_a_bad_variable_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, env={"STEWARD_BACKEND": "nomad"})
    assert str(caught.value).startswith("STEWARD_BACKEND: Input should be 'sim' or 'kubernetes'")


def test_config_check_exits_2_with_file_line_col(tmp_path: Path) -> None:
    path = write(tmp_path, "backend: sim\nlisten:\n  prot: 80\n")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "config", "check", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert f"{path}:3:3: unknown key 'prot' in listen; allowed keys: host, port" in done.stderr
    assert "Traceback" not in done.stderr


def test_config_check_follows_what_it_names(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("pools:\n  gx10: {min_cards: 3, max_cards: 1}\n")
    path = write(tmp_path, f"policy: {policy}\n")
    result = CliRunner().invoke(app, ["config", "check", str(path)])
    assert result.exit_code == 2
    assert f"{policy}:2:" in result.output and "below min_cards" in result.output


def test_config_check_ok(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    result = CliRunner().invoke(app, ["config", "check", str(path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["config"]["interval_s"] == 30.0


def test_config_show_masks_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "llm:\n  base_url: http://127.0.0.1:8431/v1\n")
    monkeypatch.setenv(CONFIG_ENV, str(path))
    result = CliRunner().invoke(app, ["config", "show", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["config"]["llm"]["base_url"] == "http://127.0.0.1:8431/v1"
    assert doc["source"] == str(path)
    assert "api_key" not in json.dumps(doc["config"]["llm"])  # keys never come from the file


def test_config_may_follow_any_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # setenv (not delenv of an absent variable) so that teardown restores the environment.
    monkeypatch.setenv(CONFIG_ENV, "before.yaml")
    args = take_config_option(["status", "--json", "--config", "site.yaml"])
    assert args == ["status", "--json"]
    import os

    assert os.environ[CONFIG_ENV] == "site.yaml"
    assert take_config_option(["plan", "--config=b.yaml"]) == ["plan"]
    assert os.environ[CONFIG_ENV] == "b.yaml"


def test_a_command_reads_its_data_dir_from_the_file(tmp_path: Path) -> None:
    where = tmp_path / "state"
    path = write(tmp_path, f"data_dir: {where}\n")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "status", "--json", "--config", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["nodes"]
    assert (where / "sim.json").exists() or any(where.iterdir())
