"""`pip install .` without the lab extra: the product alone.

A fresh venv gets the wheel and the product's own dependencies (resolved by pip, none borrowed),
and none of the lab's. Its `steward`, run from a directory that is not the checkout, runs the
README's command on the embedded simulated cluster, reads and plans against a Kubernetes API
(the twin, served by this test process through the real protocol) with its readings from a real
Prometheus, and answers the lab's commands with how to install the lab: one line, exit 2, no
traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lab.bench.prometheus_server import RealPrometheus
from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.server import Twin
from tests.kubernetes.test_default_day_prometheus import twin_jobs

ROOT = Path(__file__).resolve().parents[2]
INSTALL_LAB = "pip install 'gpu-steward[lab]'"
pytestmark = pytest.mark.slow


def _sh(
    *args: str | Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with `pip install <wheel>` and no extra; its bin/ directory."""
    tmp = tmp_path_factory.mktemp("plain")
    built = _sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp, ROOT, cwd=tmp)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp.glob("gpu_steward-*.whl")
    venv = tmp / "venv"
    assert _sh(sys.executable, "-m", "venv", venv, cwd=tmp).returncode == 0
    installed = _sh(venv / "bin" / "pip", "install", "-q", wheel, cwd=tmp)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return venv / "bin"


def test_the_lab_extra_is_not_installed(plain: Path, tmp_path: Path) -> None:
    lab_only = ("matplotlib", "bpe_openai")
    probe = f"import importlib.util as u; print([m for m in {lab_only} if u.find_spec(m)])"
    found = _sh(plain / "python", "-c", probe, cwd=tmp_path)
    assert found.stdout.strip() == "[]", found.stdout + found.stderr


def test_the_readme_command_runs_on_the_embedded_cluster(plain: Path, tmp_path: Path) -> None:
    helped = _sh(plain / "steward", "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    for command in ("run", "plan", "status", "twin", "bench", "eval"):
        assert f" {command} " in helped.stdout, f"{command} is not in steward --help"
    data = tmp_path / "d"
    run = _sh(plain / "steward", "run", "--ticks", "3", "--speed", "0", "--data-dir", data,
              cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "3 tick(s)" in run.stdout


def test_status_and_plan_against_kubernetes_and_prometheus(plain: Path, tmp_path: Path) -> None:
    """The product alone against a Kubernetes API (the twin, in real time) and a real Prometheus
    scraping the twin's DCGM, engine and Kueue exporters: its readings come from Prometheus."""
    (tmp_path / "prometheus").mkdir()
    with Twin(SimCluster(default_day()), speed=1.0) as twin:
        target = twin.url.removeprefix("http://")
        jobs = twin_jobs(target, "1s")
        with RealPrometheus(tmp_path / "prometheus", [], interval="1s", jobs=jobs) as prometheus:
            prometheus.wait_until_up(len(jobs))
            config = tmp_path / "steward.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "backend": "kubernetes",
                        "kubernetes": {"server": twin.url, "in_cluster": False},
                        "metrics": {
                            "sources": ["prometheus"],
                            "prometheus": {"url": prometheus.url},
                        },
                    }
                )
            )
            env = {"KUBECONFIG": str(tmp_path / "absent")}
            argv = ("--config", config, "--data-dir", tmp_path / "k")
            planned = _sh(plain / "steward", "plan", *argv, cwd=tmp_path, env=env)
            assert planned.returncode == 0, planned.stderr
            shown = _sh(plain / "steward", "status", "--json", *argv, cwd=tmp_path, env=env)
            assert shown.returncode == 0, shown.stderr
    state = json.loads(shown.stdout)
    assert state["source"] == "kubernetes"
    cards = [g for n in state["nodes"] for g in n["gpus"]]
    assert cards
    for card in cards:
        assert card["utilization"]["source"] == "prometheus:gpu_util", card


@pytest.mark.parametrize(
    "command", [("twin", "--speed", "0"), ("bench", "loop"), ("bench", "chaos")]
)
def test_a_lab_command_says_how_to_install_the_lab(
    plain: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    out = _sh(plain / "steward", *command, cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert INSTALL_LAB in lines[0]
    assert f"steward {command[0]}" in lines[0]
