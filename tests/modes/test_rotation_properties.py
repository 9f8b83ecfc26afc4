"""Whatever fault strikes, whenever it strikes during a rotation, the pair ends serving: a working
mode answers probes, capacity is zero only inside the declared window, and the journal closes
every step it opened."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.sim.faults import ApiErrors, Fault, GidChanged, LinkDegraded, NodeLoss, ProbeFailing
from tests.modes.conftest import MODE_WORKLOADS, busy_homelab, saga, serving, zero_capacity_outside
from tools.modes import Journal

pytestmark = pytest.mark.slow

at = st.floats(min_value=0, max_value=420)
faults: st.SearchStrategy[Fault] = st.one_of(
    st.builds(
        LinkDegraded,
        link=st.just("gx10-link"),
        path=st.sampled_from(["rail-0", "rail-1"]),
        fraction=st.floats(min_value=0.05, max_value=1.0),
        at_s=at,
    ),
    st.builds(GidChanged, link=st.just("gx10-link"), gid_index=st.integers(0, 7), at_s=at),
    st.builds(ProbeFailing, workload=st.sampled_from(MODE_WORKLOADS), at_s=at),
    st.builds(NodeLoss, node=st.sampled_from(["gx10-a", "gx10-b"]), at_s=at),
    st.builds(
        ApiErrors,
        count=st.integers(1, 4),
        at_s=at,
        operations=st.sampled_from(
            [("scale",), ("probe",), ("set_accepting", "in_flight"), ("observe", "link_status")]
        ),
    ),
)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(start=st.sampled_from(["split", "cluster"]), fault=faults, seed=st.integers(0, 20))
def test_any_fault_at_any_moment_ends_in_a_working_mode(
    start: str, fault: Fault, seed: int
) -> None:
    sim = busy_homelab("split" if start == "split" else "cluster", seed=seed)
    sim.inject(fault)
    target = "cluster" if start == "split" else "split"
    with tempfile.TemporaryDirectory() as tmp:
        outcome = saga(sim, Path(tmp)).rotate(target)
        (txn,) = Journal.open(Path(tmp)).transactions()
    now = serving(sim)
    assert outcome.result != "failed", outcome.message
    assert now, outcome
    assert set(now) == set(outcome.serving)
    assert zero_capacity_outside(sim, outcome) == []
    opened = [e.step for e in txn.entries if e.status == "started"]
    closed = [e.step for e in txn.entries if e.status in ("done", "failed")]
    assert sorted(opened) == sorted(closed)
    assert txn.finished
