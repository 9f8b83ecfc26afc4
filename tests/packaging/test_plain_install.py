"""`pip install .` without the lab extra: the product alone.

A fresh venv gets the wheel and the product's own dependencies (resolved by pip, none borrowed),
and none of the lab's. Its `steward`, run from a directory that is not the checkout, runs the
README's command on the embedded simulated cluster, reads and plans against a Kubernetes API
(the twin, served by this test process through the real protocol), and answers the lab's commands
with how to install the lab: one line, exit 2, no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.server import Twin

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


def test_status_and_plan_against_a_kubernetes_api(plain: Path, tmp_path: Path) -> None:
    env = {"STEWARD_KUBERNETES_SERVER": "", "KUBECONFIG": str(tmp_path / "absent")}
    with Twin(SimCluster(default_day())) as twin:
        env["STEWARD_KUBERNETES_SERVER"] = twin.url
        for command in ("status", "plan"):
            out = _sh(plain / "steward", command, "--backend", "kubernetes", "--data-dir",
                      tmp_path / "k", cwd=tmp_path, env=env)  # fmt: skip
            assert out.returncode == 0, f"steward {command}: {out.stderr}"
            assert "Traceback" not in out.stderr
        assert twin.requests, "steward never reached the API server"


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
