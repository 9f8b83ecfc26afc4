"""kill -9 at every step of a rotation, in a real `steward mode rotate` process: a new process
finishes the transaction from the journal — its commit, or its rollback — and leaves a working
mode, the journal showing every step, and a decision log that verifies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audit import AuditLog, ModeStep
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.faults import Fault, ProbeFailing
from lab.sim.scenario import Scenario
from tools.modes import CRASH_ENV, FORWARD, Journal

pytestmark = pytest.mark.slow


def steward(
    data_dir: Path, *args: str, crash_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    if crash_at:
        env[CRASH_ENV] = crash_at
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def split_pair(data_dir: Path, faults: tuple[Fault, ...] = ()) -> None:
    """A homelab in split mode at night with traffic, past the policy's 30-minute dwell."""
    demand = PoissonDemand(target="gx10", rate_per_min=12, input_tokens=1500, output_tokens=300)
    scenario = Scenario(seed=5, mode="split", demand=(demand,), faults=faults)
    sim = SimCluster.open(data_dir, scenario)
    sim.advance(1900)
    sim.save(data_dir)


def mirrored(data_dir: Path) -> list[ModeStep]:
    log = AuditLog.open(data_dir, readonly=True)
    try:
        return [r.payload for r in log.records(kind="mode_step") if isinstance(r.payload, ModeStep)]
    finally:
        log.close()


def decision_kinds(data_dir: Path, decision: str) -> list[str]:
    log = AuditLog.open(data_dir, readonly=True)
    try:
        return [r.kind for r in log.decision(decision)]
    finally:
        log.close()


@pytest.mark.parametrize(
    ("point", "faults", "ending", "final"),
    [
        *[(f"rotate:{step}", (), "committed", "cluster") for step in FORWARD],
        ("rotate:rollback", (ProbeFailing(workload="beast"),), "rolled_back", "split"),
    ],
)
def test_a_rotation_killed_at_any_step_is_finished_by_the_next_process(
    point: str, faults: tuple[Fault, ...], ending: str, final: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    split_pair(data_dir, faults)

    killed = steward(data_dir, "mode", "rotate", "cluster", "--json", crash_at=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert killed.stdout == ""
    opened = Journal.open(data_dir).unfinished()
    assert opened is not None
    last = opened.last_step()
    assert last is not None and last.status == "started"

    resumed = steward(data_dir, "mode", "resume", "--json")
    assert resumed.returncode == 0, resumed.stderr
    outcome = json.loads(resumed.stdout)["resumed"]
    assert outcome["result"] == ending and outcome["final_mode"] == final
    assert outcome["resumed"] is True

    state = SimCluster.open(data_dir).observe()
    assert state.active_mode is not None and state.active_mode.name == final
    assert Journal.open(data_dir).unfinished() is None
    (txn,) = Journal.open(data_dir).transactions()
    times = [e.at for e in txn.entries]
    assert times == sorted(times)  # the cluster's clock never went back across the crash
    started = [e.step for e in txn.entries if e.status == "started"]
    crashed = point.split(":")[1]
    assert started.count(crashed) == 2  # once before the kill, once on resume
    for step in ("preflight", "drain", "switch", "probe"):
        assert step in started

    verify = steward(data_dir, "audit", "verify", "--json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    steps = mirrored(data_dir)
    assert [(m.rotation_id, m.detail["seq"]) for m in steps] == [
        (txn.txn, e.seq) for e in txn.entries
    ]
    decision = steps[0].decision_id
    assert decision is not None
    kinds = decision_kinds(data_dir, decision)
    assert kinds[0] == "intent" and kinds[-1] == "outcome"


NIGHT_BEAST = """\
name: night-beast
seed: 11
mode: split
demand:
  - kind: poisson
    target: beast
    rate_per_min: 3
    input_tokens: 3000
    output_tokens: 400
"""


def test_a_daemon_killed_mid_rotation_finishes_it_when_it_starts_again(tmp_path: Path) -> None:
    """At night, requests for the cluster's model make the loop rotate split -> cluster once
    the 30-minute dwell is over (tick 120); the daemon dies inside the switch."""
    scenario = tmp_path / "night.yaml"
    scenario.write_text(NIGHT_BEAST)
    data_dir = tmp_path / "data"
    run = ("run", "--scenario", str(scenario), "--speed", "0")
    killed = steward(data_dir, *run, "--ticks", "130", crash_at="rotate:switch")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert Journal.open(data_dir).unfinished() is not None

    again = steward(data_dir, *run, "--ticks", "1")
    assert again.returncode == 0, again.stderr
    (txn,) = Journal.open(data_dir).transactions()
    end = txn.end
    assert end is not None and end.result == "committed"
    state = SimCluster.open(data_dir).observe()
    assert state.active_mode is not None and state.active_mode.name == "cluster"
    verify = steward(data_dir, "audit", "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert [m.step for m in mirrored(data_dir)][-1] == "end"
