"""The built-in day on the Kubernetes backend against the twin: what its system tests share.

`TwinWorld` is the loop's time on the twin (simulated; letting it pass advances the twin and
waits for the watch caches), `loop_on_twin` runs the loop's ticks there, and `decisions` reads a
decision log back in a form two runs can be compared in (`assert_same` names the first that
differs).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from agent.audit import AuditLog
from agent.daemon.runtime import Runtime
from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.server import Twin
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy
from tools.backends.base import MetricSource
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.parts import Parts
from tools.clock import VirtualClock

TICK_S = 15.0


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


def loop_on_twin(  # noqa: PLR0917 - one call shape, for these tests
    data_dir: Path,
    cluster: KubernetesCluster,
    world: TwinWorld,
    policy: Policy,
    sources: Sequence[MetricSource],
    ticks: int,
) -> None:
    """`ticks` ticks of the loop on the Kubernetes backend, on the twin's clock."""
    parts = Parts(
        orchestrator=cluster,
        gateway=cluster,
        fabric=cluster,
        sources=tuple(sources),
        clock=VirtualClock(world),
        advance=world.advance,
    )
    runtime = Runtime.open(data_dir, parts, policy)
    try:
        runtime.start()
        for _ in range(ticks):
            runtime.tick(TICK_S)
    finally:
        runtime.close()
