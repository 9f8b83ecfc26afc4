"""Drain through the Eviction API: PodDisruptionBudgets make it wait, and nothing else goes."""

from __future__ import annotations

import time

from kubernetes import client

from lab.sim.scenario import FleetProfile, Scenario
from lab.twin.resources import POD
from lab.twin.server import Twin
from tests.kubernetes.conftest import open_backend, twin_of


def pdb(name: str, selector: dict[str, str], **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": selector}, **spec},
    }


def pods(twin: Twin) -> dict[str, tuple[str, str]]:
    """Pod name -> (node, uid) for Steward's namespace."""

    def read() -> dict[str, tuple[str, str]]:
        return {
            name: (obj["spec"].get("nodeName", ""), obj["metadata"]["uid"])
            for (ns, name), obj in twin.store.table(POD).items()
            if ns == "default"
        }

    return twin.call(read)


def test_a_budget_that_allows_nothing_holds_its_pod_and_only_its_pod(twin: Twin) -> None:
    b = open_backend(twin)
    try:
        policy = client.PolicyV1Api(b.api)
        policy.create_namespaced_pod_disruption_budget(
            "default",
            pdb("tts", {"steward.dev/workload": "tts"}, minAvailable=1),  # type: ignore[arg-type]
        )
        others = {k: v for k, v in pods(twin).items() if v[0] != "ws-1"}
        result = b.drain("ws-1", 1.5)
        assert result.outcome == "deadline" and "tts" in result.message
        after = pods(twin)
        assert {k: v for k, v in after.items() if k in others} == others  # nothing else went
        tts = [k for k, v in after.items() if k.startswith("tts-") and v[0] == "ws-1"]
        assert (
            len(tts) == 1
            and "deletionTimestamp" not in twin.store.table(POD)[("default", tts[0])]["metadata"]
        )
        refused = [r for r in twin.requests if r.path.endswith("/eviction") and r.status == 429]
        assert len(refused) >= 3  # asked again until the deadline
    finally:
        b.close()


def test_evictions_wait_for_the_budget_then_go_on() -> None:
    """Two replicas of one workload on the node, maxUnavailable 1: the second eviction waits
    until the first one's replacement is ready elsewhere."""
    scenario = Scenario(name="fleet", profile=FleetProfile(nodes=16, gpus_per_node=8))
    with twin_of(scenario, speed=60.0) as t:
        b = open_backend(t)
        try:
            state = b.observe()
            node = "node-0002"  # an llm-small node: eight one-card replicas
            on_node = [w.name for w in state.workloads for p in w.placement if node in p.nodes]
            workload = max(set(on_node), key=on_node.count)
            assert on_node.count(workload) >= 2
            client.PolicyV1Api(b.api).create_namespaced_pod_disruption_budget(
                "default",
                pdb(workload, {"steward.dev/workload": workload}, maxUnavailable=1),  # type: ignore[arg-type]
            )
            others = {k: v for k, v in pods(t).items() if v[0] != node}
            started = time.monotonic()
            result = b.drain(node, 30.0)
            assert result.outcome == "drained", result.message
            assert time.monotonic() - started < 30
            refused = [r for r in t.requests if r.path.endswith("/eviction") and r.status == 429]
            assert refused, "the budget never said no: the test shows nothing"
            after = pods(t)
            assert all(after.get(k) == v for k, v in others.items())  # none deleted elsewhere
            assert not [k for k, v in after.items() if v[0] == node]
        finally:
            b.close()
