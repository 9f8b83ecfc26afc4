"""No input can exhaust the agent: every door refuses what is too large, too deep, too aliased or
absurd with FILE:LINE:COL and exit 2, in bounded time and memory.

Before: `steward policy check /dev/zero` grew to 8.2 GB in 6 s (as `--config` too), a 51 MB
policy ran past 120 s, 10^12 replicas in a scenario grew to 5.3 GB in 20 s, and deeply nested
YAML, `memory_gib: 1e300` or `start: 9999-12-31` ended in tracebacks.

Each case runs the real `steward` in a subprocess and measures it: its peak RSS from the kernel
(wait4's rusage of that child), and its wall time beyond what `steward --version` takes on the
same machine at the same moment — starting Python and importing the CLI is not the input's cost,
and on a shared 2-core machine it alone takes seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

LIMIT_S = 5.0
LIMIT_RSS_MB = 300.0


@dataclass(frozen=True)
class Run:
    code: int
    seconds: float
    rss_mb: float
    output: str
    """stdout and stderr"""


LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Starts the command from a small process: Linux carries a process's peak RSS across fork and
exec, so a child forked straight from this test process (hundreds of MB after a whole suite)
would report the test's peak, not its own."""


def _steward(args: list[str], cwd: Path) -> Run:
    err = cwd / "output.txt"
    peak = cwd / "peak-kb.txt"
    with err.open("wb") as sink:
        start = time.monotonic()
        child = subprocess.run(
            [sys.executable, "-c", LAUNCHER, str(peak), "-m", "agent.cli", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            env={k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")},
            check=False,
        )
        seconds = time.monotonic() - start
    return Run(child.returncode, seconds, int(peak.read_text()) / 1024, err.read_text())


@pytest.fixture(scope="module")
def start_s(tmp_path_factory: pytest.TempPathFactory) -> float:
    """What `steward --version` takes here now: the cost of starting, not of any input."""
    where = tmp_path_factory.mktemp("start")
    return min(_steward(["--version"], where).seconds for _ in range(2))


def _refused(run: Run, start_s: float, says: str) -> None:
    assert "Traceback" not in run.output, run.output
    assert run.code == 2, run.output
    assert says in run.output, run.output
    assert run.rss_mb <= LIMIT_RSS_MB, f"{run.rss_mb:.0f} MB"
    assert run.seconds - start_s <= LIMIT_S, f"{run.seconds:.1f} s (start {start_s:.1f} s)"


def test_policy_check_of_dev_zero(tmp_path: Path, start_s: float) -> None:
    run = _steward(["policy", "check", "/dev/zero"], tmp_path)
    _refused(run, start_s, "/dev/zero:1:1: the policy file is larger than 1 MiB")


def test_dev_zero_as_the_config(tmp_path: Path, start_s: float) -> None:
    run = _steward(["--config", "/dev/zero", "config", "check"], tmp_path)
    _refused(run, start_s, "/dev/zero:1:1: the config file is larger than 1 MiB")


def test_a_51_mb_policy(tmp_path: Path, start_s: float) -> None:
    big = tmp_path / "big.yaml"
    line = "  pool-{:07d}: {{max_cards: 1}}\n"
    with big.open("w") as out:
        out.write("pools:\n")
        out.writelines(line.format(i) for i in range(1_700_000))
    assert big.stat().st_size > 51_000_000
    run = _steward(["policy", "check", str(big)], tmp_path)
    _refused(run, start_s, f"{big}:1:1: the policy file is larger than 1 MiB (5")


def test_a_scenario_with_10_to_the_12_replicas(tmp_path: Path, start_s: float) -> None:
    scenario = tmp_path / "huge.yaml"
    scenario.write_text("name: huge\nreplicas:\n  tts: 1000000000000\n")
    run = _steward(
        ["run", "--scenario", str(scenario), "--ticks", "1", "--data-dir", "d"], tmp_path
    )
    _refused(run, start_s, f"{scenario}:3:3: replicas.tts: Input should be less than or equal")


@pytest.mark.parametrize("door", ["policy", "config", "scenario"])
def test_deeply_nested_yaml(tmp_path: Path, start_s: float, door: str) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("pools: " + "[" * 400_000 + "]" * 400_000 + "\n")
    args = {
        "policy": ["policy", "check", str(deep)],
        "config": ["--config", str(deep), "config", "check"],
        "scenario": ["status", "--scenario", str(deep), "--data-dir", "d"],
    }[door]
    run = _steward(args, tmp_path)
    _refused(run, start_s, f"{deep}:1:39: refused: nested deeper than 32 levels")


def test_aliases_that_expand_to_a_billion_values(tmp_path: Path, start_s: float) -> None:
    laughs = tmp_path / "laughs.yaml"
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 9)]
    laughs.write_text("\n".join(rows) + "\n")
    run = _steward(["policy", "check", str(laughs)], tmp_path)
    _refused(run, start_s, "once its aliases are expanded")
    assert f"{laughs}:5:" in run.output  # at the alias that passed the budget


def test_absurd_numbers_and_dates_in_a_scenario(tmp_path: Path, start_s: float) -> None:
    memory = tmp_path / "memory.yaml"
    memory.write_text("name: m\nworkloads:\n  - name: w\n    pool: render\n    memory_gib: 1e300\n")
    run = _steward(["status", "--scenario", str(memory), "--data-dir", "d1"], tmp_path)
    _refused(run, start_s, f"{memory}:5:17: workloads.0.memory_gib: the number 1e300 is beyond")

    late = tmp_path / "late.yaml"
    late.write_text("name: late\nstart: 9999-12-31\n")
    run = _steward(["status", "--scenario", str(late), "--data-dir", "d2"], tmp_path)
    _refused(run, start_s, f"{late}:2:1: start: a start between 2000-01-01")
