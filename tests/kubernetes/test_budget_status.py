"""The twin's PodDisruptionBudget status, counted as the disruption controller counts it."""

from __future__ import annotations

from typing import Any

from lab.twin.budgets import budget_status

Obj = dict[str, Any]


def pod(ready: bool, terminating: bool = False) -> Obj:
    meta: Obj = {"name": "p"}
    if terminating:
        meta["deletionTimestamp"] = "2026-12-01T08:00:00Z"
    cond = {"type": "Ready", "status": "True" if ready else "False"}
    return {"metadata": meta, "status": {"conditions": [cond]}}


def pdb(**spec: object) -> Obj:
    return {"metadata": {"name": "b", "generation": 1}, "spec": spec}


def test_max_unavailable_counts_against_the_controllers_scale() -> None:
    """Four asked for, one evicted and not yet replaced: nothing more may go."""
    three_ready = [pod(True), pod(True), pod(True)]
    status = budget_status(pdb(maxUnavailable=1), three_ready, scale=4)
    assert status["expectedPods"] == 4 and status["disruptionsAllowed"] == 0
    assert (
        budget_status(pdb(maxUnavailable=1), [*three_ready, pod(True)], scale=4)[
            "disruptionsAllowed"
        ]
        == 1
    )


def test_a_replacement_not_ready_yet_is_not_healthy() -> None:
    pods = [pod(True), pod(True), pod(True), pod(False)]
    assert budget_status(pdb(maxUnavailable=1), pods, scale=4)["disruptionsAllowed"] == 0


def test_an_integer_min_available_counts_the_pods_there_are() -> None:
    pods = [pod(True), pod(True), pod(False, terminating=True)]
    status = budget_status(pdb(minAvailable=1), pods, scale=5)
    assert status["expectedPods"] == 2 and status["disruptionsAllowed"] == 1


def test_a_percentage_is_rounded_up_against_the_scale() -> None:
    pods = [pod(True)] * 4
    status = budget_status(pdb(minAvailable="50%"), pods, scale=5)
    assert status["desiredHealthy"] == 3 and status["disruptionsAllowed"] == 1


def test_without_a_known_controller_the_pods_are_counted() -> None:
    pods = [pod(True), pod(True)]
    assert budget_status(pdb(maxUnavailable=1), pods)["disruptionsAllowed"] == 1
