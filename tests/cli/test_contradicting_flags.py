"""Flags that name two clusters at once are refused, never silently resolved one way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["status", "--backend", "sim", "--kubeconfig", "KUBECONFIG_FILE"], "--kubeconfig"),
        (["plan", "--backend", "sim", "--context", "prod"], "--context"),
    ],
)
def test_backend_sim_with_a_real_clusters_flag_is_refused(
    tmp_path: Path, command: list[str], flag: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    args = [str(kubeconfig) if a == "KUBECONFIG_FILE" else a for a in command]
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"--backend sim and {flag} ask for two different clusters" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())
