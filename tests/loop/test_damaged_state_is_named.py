"""Damaged state is named, never crashed on or silently rebuilt — through the real `steward`.

Before: one garbled page of audit.db passed `audit verify` while `run` and `plan` then crashed
with DatabaseError at every start; audit.head, sim.json, pause.json or steward.lock replaced by
a directory, or a garbled pause.json, ended in tracebacks; deleting sim.json silently rebuilt the
simulated cluster; a data dir that was a symlink to / was accepted (14 state files written
into /).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

DAMAGE = "is damaged: SQLite's integrity check says: database disk image is malformed"


def steward(*args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def used(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir an agent ran in, with decisions in its log."""
    data = tmp_path_factory.mktemp("used") / "data"
    code, out = steward("run", "--ticks", "150", "--speed", "0", "--data-dir", str(data))
    assert code == 0, out
    with closing(sqlite3.connect(data / "audit.db")) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return data


def _copy(used: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(used, data)
    return data


def test_a_garbled_page_of_the_log_is_named_by_verify_run_and_plan(
    used: Path, tmp_path: Path
) -> None:
    data = _copy(used, tmp_path)
    with closing(sqlite3.connect(data / "audit.db")) as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'records'")
        page = int(root.fetchone()[0])
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    with (data / "audit.db").open("r+b") as db:
        db.seek((page - 1) * size)
        db.write(b"\x0d" + b"\xa5" * (size - 1))  # a leaf page header over garbage

    code, out = steward("audit", "verify", "--data-dir", str(data))
    assert code == 1 and f"{data / 'audit.db'} {DAMAGE}" in out, out
    for command in (("run", "--ticks", "1"), ("plan",)):
        code, out = steward(*command, "--data-dir", str(data))
        assert code == 2, out
        assert f"{data / 'audit.db'} {DAMAGE}" in out, out
        assert "Restore audit.db from a backup" in out


@pytest.mark.parametrize(
    "name", ["audit.head", "sim.json", "pause.json", "steward.lock", "loop.json"]
)
def test_a_state_file_replaced_by_a_directory_is_named(
    used: Path, tmp_path: Path, name: str
) -> None:
    data = _copy(used, tmp_path)
    (data / name).unlink(missing_ok=True)
    (data / name).mkdir()

    code, out = steward("run", "--ticks", "1", "--data-dir", str(data))

    assert code == 2, out
    assert f"{data / name} is a directory, not the state file Steward keeps there" in out
    assert "Move it away" in out


def test_a_garbled_pause_is_named_and_resume_lifts_it(used: Path, tmp_path: Path) -> None:
    data = _copy(used, tmp_path)
    (data / "pause.json").write_text('{"by": "ana", "at": ')

    code, out = steward("run", "--ticks", "1", "--data-dir", str(data))
    assert code == 2 and f"{data / 'pause.json'}: the pause is damaged" in out, out

    code, out = steward("resume", "--data-dir", str(data))
    assert code == 0, out
    assert not (data / "pause.json").exists()


def test_a_missing_cluster_in_a_used_data_dir_is_refused_not_rebuilt(
    used: Path, tmp_path: Path
) -> None:
    data = _copy(used, tmp_path)
    (data / "sim.json").unlink()

    code, out = steward("run", "--ticks", "1", "--data-dir", str(data))

    assert code == 2, out
    assert f"the simulated cluster {data / 'sim.json'} is missing, but {data} has history" in out
    assert not (data / "sim.json").exists()


def test_a_data_dir_resolving_to_root_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to("/")

    code, out = steward("run", "--ticks", "1", "--data-dir", str(link))

    assert code == 2, out
    assert f"data dir {link} (which resolves to /) is a system directory" in out
    assert not Path("/steward.lock").exists() and not Path("/audit.db").exists()
