"""Findings reach people: one audit record when a finding appears and one when it clears (not
one per tick, not again after a restart), a structlog line, the steward_findings gauge and a
notice — for a degraded link, a changed GID, a card counted twice, stale metrics, a replica with
no node to run on and a context set below what fits."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agent.audit import AuditLog, FindingChange
from agent.daemon.runtime import Runtime
from agent.loop.findings import findings_of, open_findings
from agent.signals.model import Signals
from lab.sim.backend import SimCluster
from lab.sim.faults import GidChanged, LinkDegraded, MpsDoubleCount, NodeLoss
from lab.sim.scenario import Scenario
from tests.approvals.conftest import Recorder
from tests.loop.conftest import open_runtime
from tools.model import ReplicaPlacement

FAULTS = Scenario(
    name="findings",
    replicas={"render": 0, "burst-llm": 0},
    faults=(
        LinkDegraded(link="gx10-link", path="rail-1", fraction=0.11, at_s=60, duration_s=120),
        GidChanged(link="gx10-link", path="rail-0", gid_index=1, at_s=60, duration_s=120),
        MpsDoubleCount(node="ws-1", at_s=60, duration_s=120),
        NodeLoss(node="ws-1", at_s=300, duration_s=60),
    ),
)
EXPECTED = {
    "degraded_link:gx10-link/rail-1",
    "gid_changed:gx10-link/rail-0",
    "shared_card:ws-1",
}


def _changes(log: AuditLog) -> list[FindingChange]:
    return [r.payload for r in log.records(kind="finding") if isinstance(r.payload, FindingChange)]


def _gauge(runtime: Runtime, kind: str) -> float | None:
    return runtime.ctx.telemetry.registry.get_sample_value("steward_findings", {"kind": kind})


def test_each_finding_is_recorded_once_when_it_appears_and_once_when_it_clears(
    data_dir: Path,
) -> None:
    recorder = Recorder()
    with open_runtime(data_dir, FAULTS) as runtime:
        runtime.ctx.notifier = recorder
        for _ in range(8):  # to 120 s: the faults have begun
            runtime.tick(15.0)
        assert _gauge(runtime, "degraded_link") == 1.0
        assert _gauge(runtime, "gid_changed") == 1.0
        assert _gauge(runtime, "shared_card") == 1.0
        assert set(open_findings(runtime.ctx.audit)) >= EXPECTED
    with open_runtime(data_dir, FAULTS) as runtime:  # a restart in the middle of the faults
        runtime.ctx.notifier = recorder
        runtime.tick(15.0)
        assert _gauge(runtime, "degraded_link") == 1.0  # open in the log: not announced again
        for _ in range(27):  # to 540 s: they cleared; the node was lost and came back
            runtime.tick(15.0)
        assert _gauge(runtime, "degraded_link") == 0.0
        changes = _changes(runtime.ctx.audit)
        assert runtime.ctx.audit.verify().ok
    by_key = Counter((c.key, c.status) for c in changes)
    for key in EXPECTED:
        assert by_key[(key, "appeared")] == 1, (key, by_key)
        assert by_key[(key, "cleared")] == 1, (key, by_key)
    stale = {c.key for c in changes if c.finding == "stale_metrics"}
    assert "stale_metrics:ws-1" in stale  # the lost node's cards
    assert all(v == 1 for v in by_key.values()), by_key
    kinds = Counter(n.kind for n in recorder.notices)
    assert kinds["finding_appeared"] == sum(1 for c in changes if c.status == "appeared")
    assert kinds["finding_cleared"] == sum(1 for c in changes if c.status == "cleared")
    link = next(c for c in changes if c.key == "degraded_link:gx10-link/rail-1")
    assert "11%" in link.text


def test_a_replica_without_a_node_and_a_short_context_are_findings() -> None:
    state = SimCluster.homelab(seed=0).observe()
    burst = state.workload("burst-llm")
    render = state.node("render-1")
    assert burst is not None and render is not None and burst.context_length == 32_768
    placed = ReplicaPlacement(index=0, nodes=("render-1",), gpus=(render.gpus[0].uuid,), ready=True)
    pending = ReplicaPlacement(index=1, nodes=())
    changed = burst.model_copy(
        update={"desired_replicas": 2, "ready_replicas": 1, "placement": (placed, pending)}
    )
    workloads = tuple(changed if w.name == "burst-llm" else w for w in state.workloads)
    state = state.model_copy(update={"workloads": workloads})
    found = findings_of(state, Signals(observed_at=state.observed_at))
    assert found["unschedulable:burst-llm"].text == (
        "burst-llm: 1 of 2 replica(s) have no node to run on"
    )
    assert found["context_below_fit:burst-llm:32768"].text == (
        "burst-llm: qwen3-32b is set to 32,768 tokens of context; 65,536 and 131,072 fit on "
        "RTX PRO 6000 Blackwell (an advisory: Steward changes no context by itself)"
    )
    # Told once per configured context: another context is another finding.
    longer = changed.model_copy(update={"context_length": 65_536})
    workloads = tuple(longer if w.name == "burst-llm" else w for w in state.workloads)
    again = findings_of(
        state.model_copy(update={"workloads": workloads}), Signals(observed_at=state.observed_at)
    )
    assert "context_below_fit:burst-llm:65536" in again
    assert "context_below_fit:burst-llm:32768" not in again
