"""A command's flags are a source of its configuration like the file and the environment:
`steward run --port P …` lays them over steward.yaml and the STEWARD_* variables, and its first
log line (`configuration`) names each key's source — file, environment NAME, flag --X — as
`steward config show` does, where `--kubeconfig` / `--context` show as flags too."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agent.daemon.config import load_config
from tools.errors import InvalidInput

ENV = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_") and k != "KUBECONFIG"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def steward(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        cwd=cwd,
        env={**ENV, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_run_records_its_flags_as_the_source_of_their_keys(tmp_path: Path) -> None:
    (tmp_path / "steward.yaml").write_text("interval_s: 20\nmetrics:\n  max_age_s: 60\n")
    port = _free_port()
    done = steward(
        "run", "--ticks", "1", "--port", str(port), "--interval", "30", "--planner", "rules",
        "--metrics", "none", "--data-dir", str(tmp_path / "data"), "--config", "steward.yaml",
        cwd=tmp_path, STEWARD_LISTEN__HOST="127.0.0.1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    (configuration,) = [e for e in events if e["event"] == "configuration"]
    keys = configuration["keys"]
    assert keys["listen.port"] == {"value": port, "source": "flag --port"}
    assert keys["interval_s"] == {"value": 30.0, "source": "flag --interval"}  # over the file's
    assert keys["planner"] == {"value": "rules", "source": "flag --planner"}
    assert keys["metrics.sources"] == {"value": [], "source": "flag --metrics"}
    assert keys["data_dir"]["source"] == "flag --data-dir"
    assert keys["metrics.max_age_s"] == {"value": 60.0, "source": "file steward.yaml"}
    assert keys["listen.host"] == {
        "value": "127.0.0.1",
        "source": "environment STEWARD_LISTEN__HOST",
    }
    assert "backend" not in keys  # its default: only what something set is listed
    assert configuration["source"] == "steward.yaml + STEWARD_LISTEN__HOST"
    # The flag is what the run used: /healthz and /metrics were served on that port.
    assert f"serving /healthz and /metrics on 127.0.0.1:{port}" in done.stderr


def test_config_show_names_the_cluster_flags_as_sources(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    done = steward(
        "config", "show", "--json", "--kubeconfig", str(kubeconfig), "--context", "gpu-prod",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["config"]["kubernetes"]["context"] == "gpu-prod"
    assert shown["config"]["backend"] == "kubernetes"
    sources = shown["sources"]
    assert sources["kubernetes.context"] == {"source": "flag", "from": "--context"}
    assert sources["kubernetes.kubeconfig"] == {"source": "flag", "from": "--kubeconfig"}
    assert sources["backend"]["source"] == "flag"


def test_a_flag_the_schema_refuses_is_named() -> None:
    settings = load_config(env={})
    with pytest.raises(InvalidInput, match=r"^--interval 0: Input should be greater than 0"):
        settings.with_flags({"interval_s": ("--interval", 0)})
    nested = settings.with_flags({"listen.port": ("--port", 9108), "planner": ("--planner", None)})
    assert nested.listen.port == 9108
    assert nested.origin("listen.port") == ("flag", "--port")
    assert nested.origin("planner") == ("default", "")
