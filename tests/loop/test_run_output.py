"""`steward run` reports for people on stdout and for machines with --json, one document."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", "--speed", "0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_run_json_is_one_document_on_stdout(tmp_path: Path) -> None:
    done = _run("--ticks", "5", "--json", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # nothing else on stdout: logs go to stderr
    assert doc["ticks"] == 5 and doc["data_dir"] == str(tmp_path)
    assert {"decisions", "executed", "waiting_now", "ran", "in_progress"} <= set(doc)


def test_run_piped_prints_its_summary_on_stdout(tmp_path: Path) -> None:
    done = _run("--ticks", "3", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("3 tick(s)")
    assert f"the log and the cluster are in {tmp_path}" in done.stdout


def test_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("steward 0.1.0")  # then the commit
