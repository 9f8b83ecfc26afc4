"""Preflight refuses a rotation on the seeds' faults — a link at 11 % of nominal, a hot-plugged
path at 13–15 Gb/s, a changed RoCE GID index, a lost node, a model that does not fit — and names
what is wrong and what to do."""

from __future__ import annotations

import pytest

from lab.sim.faults import Fault, GidChanged, LinkDegraded, NodeLoss
from tests.modes.conftest import POLICY_LIMITS, ModeName, busy_homelab
from tools.model import ClusterState
from tools.modes import PreflightLimits, placement_fit, preflight


def fresh(faults: tuple[Fault, ...] = (), mode: ModeName = "split") -> ClusterState:
    sim = busy_homelab(mode)
    for fault in faults:
        sim.inject(fault)
    sim.advance(30)  # the fault stands: the next scrapes have seen it
    return sim.observe()


def failures(
    state: ClusterState, target: str, limits: PreflightLimits = POLICY_LIMITS
) -> list[str]:
    return [c.message for c in preflight(state, target, limits, placement_fit).failures()]


def test_a_healthy_pair_may_rotate_either_way() -> None:
    state = fresh()
    report = preflight(state, "cluster", POLICY_LIMITS, placement_fit)
    assert report.ok, report.failures()
    names = {c.name for c in report.checks}
    assert {"link:gx10-link/rail-0", "gid:gx10-link/rail-1", "fit:beast", "node:gx10-a"} <= names


def test_a_path_at_eleven_percent_of_nominal_is_refused() -> None:
    state = fresh((LinkDegraded(link="gx10-link", path="rail-0", fraction=0.11),))
    (problem,) = failures(state, "cluster")
    assert "gx10-link/rail-0: 22 of 200 Gb/s (11%), below the 40% floor" in problem
    assert "reboot" in problem


def test_hot_plugged_paths_at_fourteen_gbps_are_refused() -> None:
    faults = tuple(
        LinkDegraded(link="gx10-link", path=p, fraction=0.07) for p in ("rail-0", "rail-1")
    )
    problems = failures(fresh(faults), "cluster")
    assert len(problems) == 2
    assert all("14 of 200 Gb/s (7%)" in p for p in problems)


def test_a_changed_gid_index_is_refused_though_the_link_is_fast() -> None:
    state = fresh((GidChanged(link="gx10-link", gid_index=1),))
    problems = failures(state, "cluster")
    assert len(problems) == 2
    assert "RoCE GID index is 1, the serving configuration expects 3" in problems[0]
    assert "NCCL does not warn" in problems[0]


def test_the_link_does_not_matter_to_a_mode_within_one_node() -> None:
    faults = (
        LinkDegraded(link="gx10-link", path="rail-0", fraction=0.11),
        GidChanged(link="gx10-link", gid_index=1),
    )
    assert failures(fresh(faults, mode="cluster"), "split") == []


def test_a_lost_node_is_refused() -> None:
    state = fresh((NodeLoss(node="gx10-b"),))
    problems = failures(state, "cluster")
    assert "node gx10-b is not ready" in problems


def test_a_model_that_does_not_fit_at_its_context_is_refused() -> None:
    state = fresh()
    workloads = tuple(
        w.model_copy(update={"context_length": 4 * 1_048_576}) if w.name == "beast" else w
        for w in state.workloads
    )
    (problem,) = failures(state.model_copy(update={"workloads": workloads}), "cluster")
    assert "glm-5.3-flash at 4,194,304 tokens does not fit in cluster mode" in problem


def test_a_link_without_a_fresh_reading_is_refused() -> None:
    state = fresh()
    link = state.links[0]
    blind = link.model_copy(
        update={
            "paths": tuple(
                p.model_copy(update={"negotiated_gbps": p.negotiated_gbps.but(status="stale")})
                for p in link.paths
            )
        }
    )
    problems = failures(state.model_copy(update={"links": (blind,)}), "cluster")
    assert len(problems) == 2
    assert all("no fresh reading of the negotiated speed" in p for p in problems)


@pytest.mark.parametrize("target", ["bogus", "split"])
def test_an_unknown_or_active_target_is_refused(target: str) -> None:
    state = fresh(mode="split")
    problems = failures(state, target)
    expected = "does not exist (known: split, cluster)" if target == "bogus" else "already"
    assert any(expected in p for p in problems), problems
