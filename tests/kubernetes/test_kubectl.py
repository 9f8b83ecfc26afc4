"""The real kubectl against the twin: get, scale, cordon and drain behave as on a cluster."""

from __future__ import annotations

import json
import subprocess

from lab.sim.scenario import Scenario
from lab.twin.server import Twin
from tests.kubernetes.conftest import KUBECTL, kubectl, twin_of


def test_get_scale_cordon_drain() -> None:
    with twin_of(Scenario(replicas={"tts": 1, "worker": 1}), speed=50.0) as t:
        nodes = kubectl(t, "get", "nodes")
        assert nodes.returncode == 0, nodes.stderr
        lines = nodes.stdout.splitlines()
        assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        assert sorted(line.split()[0] for line in lines[1:]) == [
            "gx10-a",
            "gx10-b",
            "render-1",
            "ws-1",
        ]
        pods = kubectl(t, "get", "pods", "-o", "json")
        assert pods.returncode == 0, pods.stderr
        names = [p["metadata"]["name"] for p in json.loads(pods.stdout)["items"]]
        assert any(n.startswith("tts-") for n in names)
        wide = kubectl(t, "get", "pods", "-A", "--field-selector", "spec.nodeName=ws-1")
        assert "nvidia-device-plugin" in wide.stdout and "tts-" in wide.stdout

        scaled = kubectl(t, "scale", "deployment", "tts", "--replicas=2")
        assert scaled.returncode == 0 and "scaled" in scaled.stdout, scaled.stderr
        assert t.call(lambda: t.sim.engine.state.workloads["tts"].desired) == 2

        cordoned = kubectl(t, "cordon", "gx10-a")
        assert cordoned.returncode == 0 and "cordoned" in cordoned.stdout, cordoned.stderr
        assert "SchedulingDisabled" in kubectl(t, "get", "node", "gx10-a").stdout
        assert t.call(lambda: t.sim.engine.state.nodes["gx10-a"].cordoned)

        drained = kubectl(t, "drain", "ws-1", "--ignore-daemonsets", "--timeout=60s")
        assert drained.returncode == 0, drained.stderr
        assert "node/ws-1 drained" in drained.stdout
        assert "ignoring DaemonSet-managed Pods" in drained.stderr
        left = kubectl(t, "get", "pods", "--field-selector", "spec.nodeName=ws-1", "-o", "name")
        assert left.stdout.strip() == ""
        assert t.call(lambda: t.sim.engine.replicas_on("ws-1")) == []


def test_a_pdb_from_a_manifest_holds_a_drain() -> None:
    manifest = json.dumps(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "tts"},
            "spec": {
                "minAvailable": 1,
                "selector": {"matchLabels": {"steward.dev/workload": "tts"}},
            },
        }
    )
    with twin_of(Scenario(replicas={"tts": 1, "worker": 1}), speed=50.0) as t:
        created = _apply(t, manifest)
        assert created.returncode == 0, created.stderr
        drained = kubectl(t, "drain", "ws-1", "--ignore-daemonsets", "--timeout=3s")
        assert drained.returncode != 0
        assert "disruption budget" in drained.stderr
        assert "tts-" in kubectl(t, "get", "pods").stdout


def _apply(t: Twin, manifest: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, "--server", t.url, "create", "--validate=false", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
