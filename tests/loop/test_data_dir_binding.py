"""A data dir belongs to one cluster: another scenario is refused once it has a history, and
`--reset` archives the old log (still readable) instead of discarding it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _steward(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_another_scenario_on_a_used_data_dir_is_refused_then_reset(tmp_path: Path) -> None:
    where = str(tmp_path)
    assert _steward("run", "--ticks", "2", "--speed", "0", "--data-dir", where).returncode == 0
    refused = _steward("status", "--scenario", "link-11-percent", "--data-dir", where)
    assert refused.returncode == 2
    assert "Pass --reset to archive the old log" in refused.stderr
    assert "Traceback" not in refused.stderr
    # Nothing was replaced: the data dir still holds the built-in day.
    still = json.loads(_steward("status", "--json", "--data-dir", where).stdout)
    assert still["links"][0]["paths"][1]["negotiated_gbps"]["value"] > 90
    reset = _steward(
        "status", "--scenario", "link-11-percent", "--reset", "--json", "--data-dir", where
    )
    assert reset.returncode == 0, reset.stderr
    assert "archived the old log and state to" in reset.stderr
    now = json.loads(reset.stdout)
    assert now["links"][0]["paths"][1]["negotiated_gbps"]["value"] < 30  # 11 % of nominal
    (archived,) = (tmp_path / "archive").iterdir()
    verify = _steward("audit", "verify", "--data-dir", str(archived))
    assert verify.returncode == 0, verify.stdout + verify.stderr
