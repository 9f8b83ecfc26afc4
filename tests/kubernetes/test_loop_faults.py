"""The loop on the Kubernetes backend with half of its API writes failing (5xx, 409, 429,
timeouts): the same decisions as without faults, no action carried out twice, retries bounded,
and the decision log verifies (`steward audit verify`).

The loop writes little (a scale here, a placement there: a handful of requests in these 60
ticks), so the rate is high enough that the seeded draw fails several of them, of several kinds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.faults import FaultSettings
from lab.twin.readings import TwinReadings
from lab.twin.server import Twin
from policies.loader import DEFAULT_POLICY, load_policy
from tests.kubernetes.conftest import settings_for
from tests.kubernetes.day import TwinWorld, decisions, embedded_decisions, loop_on_twin
from tools.backends.kubernetes.backend import KubernetesCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
TICKS = 60  # render idles to zero, burst-llm borrows its cards twice


def test_faults_change_no_decision_and_duplicate_no_action(tmp_path: Path) -> None:
    policy = load_policy(DEFAULT_POLICY)
    expected = embedded_decisions(tmp_path / "sim", TICKS)

    with Twin(SimCluster(default_day())) as twin:
        holder: dict[str, TwinWorld] = {}
        settings = settings_for(twin, request_timeout_s=1.0, retry_attempts=10)
        cluster = KubernetesCluster(settings, now=lambda: holder["w"].now)
        world = holder["w"] = TwinWorld(twin, cluster)
        try:
            cluster.start()
            lists = cluster.lists
            twin.configure_faults(
                FaultSettings(rate=0.5, timeout_s=1.5, seed=7, methods=("PUT", "PATCH", "POST"))
            )
            sources = (TwinReadings(twin.url),)
            loop_on_twin(tmp_path / "k8s", cluster, world, policy, sources, TICKS)
            # The loop reads from its watch caches: only its writes (and watch reconnects) meet
            # the faults; tests/kubernetes/test_faults.py puts 80 writes through them.
            writes = [(r.method, r.path, r.status) for r in twin.requests if r.method != "GET"]
            assert len(twin.faults.injected) >= 2, (twin.faults.injected, writes)
            assert cluster.call.retries >= 1
            runs = twin.call(lambda: twin.sim.engine.state.workloads)
            assert runs["render"].desired == 0
            assert runs["burst-llm"].next_index == 2  # two placements, each done once
            assert cluster.call.retries <= cluster.call.calls
            assert cluster.lists == lists  # broken watches resumed; nothing listed again
        finally:
            twin.configure_faults(FaultSettings())
            cluster.close()
    assert decisions(tmp_path / "k8s") == expected  # both logs verify
