"""Every fault the seeds name, at the step where it bites, ends in a working mode: a bad link or
GID refuses the rotation before anything is touched; a failing probe rolls back to the previous
mode, which is probed too; a node lost during the switch falls back to what the surviving node
can serve; transient API errors are retried. Capacity is zero only inside the switch window."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.faults import ApiErrors, Fault, GidChanged, LinkDegraded, NodeLoss, ProbeFailing
from tests.modes.conftest import ModeName, busy_homelab, saga, serving, zero_capacity_outside
from tools.modes import Journal, RotationOutcome


def rotate(
    start: ModeName, target: ModeName, faults: list[Fault], data_dir: Path, standing: bool = False
) -> tuple[RotationOutcome, list[str], list[str]]:
    """Rotate with faults injected now (or standing for 30 s before); the outcome, what serves
    after, and the capacity gaps outside the window."""
    sim = busy_homelab(start)
    for fault in faults:
        sim.inject(fault)
    if standing:
        sim.advance(30)
    outcome = saga(sim, data_dir).rotate(target)
    return outcome, serving(sim), zero_capacity_outside(sim, outcome)


@pytest.mark.parametrize(
    ("faults", "words"),
    [
        ([LinkDegraded(link="gx10-link", path="rail-1", fraction=0.11)], "(11%), below"),
        (
            [LinkDegraded(link="gx10-link", path=p, fraction=0.07) for p in ("rail-0", "rail-1")],
            "14 of 200 Gb/s",
        ),
        ([GidChanged(link="gx10-link", gid_index=0)], "RoCE GID index is 0"),
        ([NodeLoss(node="gx10-a")], "node gx10-a is not ready"),
    ],
)
def test_a_standing_fault_refuses_the_rotation_before_anything_moves(
    faults: list[Fault], words: str, data_dir: Path
) -> None:
    outcome, after, gaps = rotate("split", "cluster", faults, data_dir, standing=True)
    assert outcome.result == "refused"
    assert words in outcome.message
    assert outcome.window_opened_at is None
    steps = [e.step for e in Journal.open(data_dir).entries() if e.step]
    assert steps == ["preflight", "preflight"]
    assert after and set(after) <= {"resident-a", "resident-b"}
    assert gaps == []


def test_a_failing_probe_rolls_back_and_probes_the_previous_mode(data_dir: Path) -> None:
    outcome, after, gaps = rotate("split", "cluster", [ProbeFailing(workload="beast")], data_dir)
    assert outcome.result == "rolled_back" and outcome.final_mode == "split"
    assert "probe failed: beast: the endpoint failed" in outcome.message
    assert not outcome.degraded
    assert {p.workload for p in outcome.probes if p.ok} == {"resident-a", "resident-b"}
    assert set(after) == {"resident-a", "resident-b"}
    assert gaps == []
    kinds = [(e.step, e.status) for e in Journal.open(data_dir).entries() if e.step]
    assert ("probe", "failed") in kinds and kinds[-1] == ("rollback", "done")


def test_a_slow_link_found_by_the_probe_rolls_back(data_dir: Path) -> None:
    """The link broke after preflight read it: the probe's tokens/s catches it."""
    outcome, after, gaps = rotate(
        "split", "cluster", [GidChanged(link="gx10-link", gid_index=0, at_s=5)], data_dir
    )
    assert outcome.result == "rolled_back"
    assert "below the floor" in outcome.message
    assert set(after) == {"resident-a", "resident-b"} and gaps == []


@pytest.mark.parametrize("lost", ["gx10-a", "gx10-b"])
def test_a_node_lost_during_the_switch_to_cluster_ends_serving(lost: str, data_dir: Path) -> None:
    outcome, after, gaps = rotate("split", "cluster", [NodeLoss(node=lost, at_s=90)], data_dir)
    survivor = "resident-b" if lost == "gx10-a" else "resident-a"
    assert outcome.result == "rolled_back" and outcome.degraded
    assert outcome.serving == (survivor,)
    assert after == [survivor]
    assert gaps == []


@pytest.mark.parametrize("lost", ["gx10-a", "gx10-b"])
def test_a_node_lost_during_the_switch_to_split_falls_back(lost: str, data_dir: Path) -> None:
    outcome, after, gaps = rotate("cluster", "split", [NodeLoss(node=lost, at_s=90)], data_dir)
    survivor = "resident-b" if lost == "gx10-a" else "resident-a"
    assert outcome.result == "fallback" and outcome.final_mode == "split" and outcome.degraded
    assert outcome.serving == (survivor,)
    assert after == [survivor]
    assert gaps == []


def test_transient_api_errors_are_retried(data_dir: Path) -> None:
    faults: list[Fault] = [
        ApiErrors(count=2, operations=("scale",)),
        ApiErrors(count=2, operations=("probe", "set_accepting", "in_flight")),
    ]
    outcome, after, gaps = rotate("cluster", "split", faults, data_dir)
    assert outcome.result == "committed"
    assert set(after) == {"resident-a", "resident-b"} and gaps == []


def test_when_nothing_can_serve_the_transaction_says_so(data_dir: Path) -> None:
    faults: list[Fault] = [ProbeFailing(workload=w) for w in ("beast", "resident-a", "resident-b")]
    outcome, after, _ = rotate("split", "cluster", faults, data_dir)
    assert outcome.result == "failed" and outcome.final_mode is None
    assert after == []
    steps = [(e.step, e.status) for e in Journal.open(data_dir).entries() if e.step]
    assert ("rollback", "failed") in steps and steps[-1] == ("fallback", "failed")
