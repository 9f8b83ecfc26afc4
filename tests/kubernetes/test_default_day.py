"""The system test: the loop on the Kubernetes backend, through the official client over HTTP
against the twin, makes the same decisions on the built-in day as the loop on the embedded
simulator — and the decision log verifies.

Both run the same scenario tick by tick (15 s of simulated time each). On the twin the loop's
clock is the twin's simulated one, and the measurements come from the twin's readings endpoint
(standing in for Prometheus: the API carries none).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent.audit import AuditLog
from agent.daemon.day import default_day
from agent.daemon.runtime import Runtime
from evals.twin.readings import TwinReadings
from evals.twin.server import Twin
from policies.loader import DEFAULT_POLICY, load_policy
from tests.kubernetes.conftest import settings_for
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.parts import Parts
from tools.backends.sim import SimCluster
from tools.clock import VirtualClock

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
TICK_S = 15.0
TICKS = 480  # the built-in day: two hours


class TwinWorld:
    """The twin's time, for the loop: now is simulated; letting time pass advances the twin
    and waits until the backend's caches have seen what changed."""

    def __init__(self, twin: Twin, cluster: KubernetesCluster) -> None:
        self.twin, self.cluster = twin, cluster

    @property
    def now(self) -> datetime:
        return self.twin.call(lambda: self.twin.sim.now)

    def advance(self, seconds: float) -> None:
        self.twin.advance(seconds)
        rv = int(self.twin.store.rv)
        for cache in self.cluster.caches.values():
            if cache.name in ("pods", "nodes", "deployments", "statefulsets", "leaderworkersets"):
                cache.wait_rv(rv, 5.0)


def decisions(data_dir: Path) -> list[Any]:
    """Each decision: when, what it proposed (with the verdicts), and which actions ran ok."""
    log = AuditLog.open(data_dir, readonly=True)
    try:
        assert log.verify().ok
        found: list[Any] = []
        for r in log.records():
            p = r.payload
            if p.kind == "intent":
                found.append(
                    (
                        p.observed_at,
                        [(q.action.model_dump(exclude={"reason"}), q.verdict) for q in p.proposals],
                    )
                )
            elif p.kind == "outcome":
                found.append([(o.index, o.executed, o.ok) for o in p.results])
        return found
    finally:
        log.close()


def embedded_decisions(data_dir: Path, ticks: int) -> list[Any]:
    """The decisions of the loop on the embedded simulator over the first `ticks` of the day."""
    embedded = Runtime.open(data_dir, SimCluster(default_day()), load_policy(DEFAULT_POLICY))
    try:
        embedded.start()
        for _ in range(ticks):
            embedded.tick(TICK_S)
    finally:
        embedded.close()
    return decisions(data_dir)


def assert_same(got: list[Any], expected: list[Any]) -> None:
    first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)
    assert got == expected, (
        f"first difference at decision {first}: {got[first : first + 2]} != "
        f"{expected[first : first + 2]}"
        if first is not None
        else f"{len(got)} decisions on the backend, {len(expected)} on the simulator"
    )


def test_the_kubernetes_backend_decides_the_day_as_the_simulator_does(tmp_path: Path) -> None:
    policy = load_policy(DEFAULT_POLICY)
    expected = embedded_decisions(tmp_path / "sim", TICKS)
    assert len(expected) >= 6  # burst-llm borrows render-1's cards and gives them back ...

    with Twin(SimCluster(default_day())) as twin:
        holder: dict[str, TwinWorld] = {}
        cluster = KubernetesCluster(settings_for(twin), now=lambda: holder["w"].now)
        world = holder["w"] = TwinWorld(twin, cluster)
        try:
            cluster.start()
            parts = Parts(
                orchestrator=cluster,
                gateway=cluster,
                fabric=cluster,
                sources=(TwinReadings(twin.url),),
                clock=VirtualClock(world),
                advance=world.advance,
            )
            runtime = Runtime.open(tmp_path / "k8s", parts, policy)
            try:
                runtime.start()
                for _ in range(TICKS):
                    runtime.tick(TICK_S)
            finally:
                runtime.close()
        finally:
            cluster.close()
    assert_same(decisions(tmp_path / "k8s"), expected)
