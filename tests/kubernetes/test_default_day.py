"""The system test: the loop on the Kubernetes backend, through the official client over HTTP
against the twin, makes the same decisions on the built-in day as the loop on the embedded
simulator — and the decision log verifies.

Both run the same scenario tick by tick (15 s of simulated time each). On the twin the loop's
clock is the twin's simulated one, and the measurements come from the twin's readings endpoint
(standing in for Prometheus: the API carries none).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.readings import TwinReadings
from lab.twin.server import Twin
from policies.loader import DEFAULT_POLICY, load_policy
from tests.kubernetes.conftest import settings_for
from tests.kubernetes.day import TwinWorld, assert_same, decisions, embedded_decisions, loop_on_twin
from tools.backends.kubernetes.backend import KubernetesCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
TICKS = 480  # the built-in day: two hours


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
            sources = (TwinReadings(twin.url),)
            loop_on_twin(tmp_path / "k8s", cluster, world, policy, sources, TICKS)
        finally:
            cluster.close()
    assert_same(decisions(tmp_path / "k8s"), expected)
