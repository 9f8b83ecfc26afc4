"""Mode-rotation preconditions: the seeds' link faults, the GID index, the dwell time."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.policies.builders import fresh, homelab, replace, run, with_path, with_workload
from tools.actions import RotateMode
from tools.model import ActiveMode, Metric

CLUSTER = RotateMode(target_mode="cluster")
SPLIT = RotateMode(target_mode="split")


def in_split(since: timedelta = timedelta(hours=2)) -> object:
    state = homelab()
    state = with_workload(state, "beast", desired_replicas=0, ready_replicas=0, placement=())
    for name in ("resident-a", "resident-b"):
        state = with_workload(state, name, desired_replicas=1, ready_replicas=1)
    return replace(state, active_mode=ActiveMode(name="split", since=state.observed_at - since))


@pytest.mark.parametrize(
    ("path_update", "decision", "rule"),
    [
        ({}, "allow", None),
        # the seeds: 11 % of nominal after a pending reboot
        ({"negotiated_gbps": fresh(22.0)}, "deny", "mode.link_fraction"),
        # 13-15 Gb/s per path after a hot-plug
        ({"negotiated_gbps": fresh(14.0)}, "deny", "mode.link_fraction"),
        # a stale reading is no reading
        ({"negotiated_gbps": Metric(value=98.0, status="stale")}, "deny", "mode.link_fraction"),
        # the RoCE GID index moved after a reboot
        ({"gid_index": fresh(5)}, "deny", "mode.gid_index"),
        ({"gid_index": Metric.missing()}, "deny", "mode.gid_index"),
    ],
)
def test_rotating_into_the_cluster_needs_a_healthy_link(path_update, decision, rule) -> None:
    state = with_path(in_split(), "rail-1", **path_update)
    verdict = run(CLUSTER, state=state).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if rule:
        assert rule in verdict.rule_ids
        assert "rail-1 of gx10-link" in verdict.message


def test_the_link_message_gives_the_figures() -> None:
    state = with_path(in_split(), "rail-0", negotiated_gbps=fresh(22.0))
    message = run(CLUSTER, state=state).verdicts[0].message
    assert "negotiates 22 Gb/s, 11% of its 200 Gb/s nominal" in message


def test_leaving_the_cluster_does_not_need_the_link() -> None:
    state = with_path(homelab(), "rail-0", negotiated_gbps=fresh(22.0))
    assert run(SPLIT, state=state).all_allowed


@pytest.mark.parametrize(
    ("since", "decision"),
    [
        (timedelta(minutes=10), "deny"),
        (timedelta(minutes=29), "deny"),
        (timedelta(minutes=30), "allow"),
    ],
)
def test_a_mode_is_kept_for_its_minimum_dwell(since, decision) -> None:
    verdict = run(CLUSTER, state=in_split(since)).verdicts[0]
    assert verdict.decision == decision, verdict.message
    if decision == "deny":
        assert verdict.rule_ids == ("mode.min_dwell",)


def test_rotating_to_the_active_mode_is_refused() -> None:
    assert run(CLUSTER).verdicts[0].rule_ids == ("mode.already_active",)


def test_a_rotation_commits_ready_replicas_so_the_serving_pool_stays_served() -> None:
    judgement = run(CLUSTER, state=in_split())
    assert judgement.all_allowed
