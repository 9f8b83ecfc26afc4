"""The installed package works without the source tree: traces and scenarios are package data.

Builds the wheel as `pip install .` (and the Dockerfile) would, installs it into a fresh venv and
runs the shipped scenarios from a directory that is not the checkout. The fresh venv borrows the
already installed dependencies (a .pth naming this venv's site-packages) so the test needs no
download of its own; Steward itself comes only from the wheel.
"""

from __future__ import annotations

import json
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _sh(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def test_the_wheel_runs_the_shipped_scenarios(tmp_path: Path) -> None:
    built = _sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path, ROOT,
                cwd=tmp_path)  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = tmp_path.glob("gpu_steward-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in (
        "lab/traces/azure-2023-conv.csv",
        "lab/traces/servegen-rates-10min.csv",
        "lab/scenarios/azure-conv-replay.yaml",
        "policies/default.yaml",
        "tools/placement/models.yaml",
    ):
        assert data in names, f"{data} is not in the wheel"

    venv = tmp_path / "venv"
    assert _sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path).returncode == 0
    (purelib,) = venv.glob("lib/python*/site-packages")
    (purelib / "borrowed-deps.pth").write_text(site.getsitepackages()[0] + "\n")
    installed = _sh(sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    purelib, wheel, cwd=tmp_path)  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    python = venv / "bin" / "python"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _sh(python, "-c", "import agent; print(agent.__file__)", cwd=elsewhere)
    assert str(purelib) in where.stdout, "Steward must come from the wheel, not the checkout"

    steward = (python, "-m", "agent.cli")
    for scenario in ("azure-conv-replay", "servegen-week", "link-11-percent"):
        data = elsewhere / scenario
        status = _sh(*steward, "status", "--scenario", scenario, "--json", "--data-dir", data,
                     cwd=elsewhere)  # fmt: skip
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["nodes"]
        run = _sh(*steward, "run", "--ticks", "4", "--speed", "0", "--json", "--data-dir", data,
                  cwd=elsewhere)  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["ticks"] == 4
    check = _sh(*steward, "policy", "check", purelib / "policies" / "default.yaml", cwd=elsewhere)
    assert check.returncode == 0, check.stdout + check.stderr
