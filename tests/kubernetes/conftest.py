"""Fixtures: the twin on loopback (in-process, its own thread) and the backend against it.

The backend talks to the twin through the unmodified official client over HTTP; kubectl is the
real one at /usr/bin/kubectl.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.sim.scenario import Scenario
from lab.twin.server import Twin
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.kubernetes.settings import KubernetesSettings

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def settings_for(twin: Twin, **kw: Any) -> KubernetesSettings:
    base: dict[str, Any] = {
        "server": twin.url,
        "in_cluster": False,
        "kubeconfig": None,
        "retry_max_wait_s": 0.05,
        "eviction_retry_s": 0.1,
        "request_timeout_s": 5.0,
    }
    base.update(kw)
    return KubernetesSettings(**base)


@pytest.fixture
def twin(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[Twin]:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    with Twin(SimCluster(default_day())) as t:
        yield t


def open_backend(twin: Twin, **kw: Any) -> KubernetesCluster:
    backend = KubernetesCluster(settings_for(twin, **kw))
    backend.start()
    return backend


@pytest.fixture
def backend(twin: Twin) -> Iterator[KubernetesCluster]:
    b = open_backend(twin)
    yield b
    b.close()


def twin_of(scenario: Scenario, speed: float = 0.0) -> Twin:
    return Twin(SimCluster(scenario), speed=speed)


def kubectl(twin: Twin, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KUBECTL, "--server", twin.url, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def versions(twin: Twin) -> dict[tuple[str, str, str], str]:
    """Every object's resourceVersion, by (resource, namespace, name)."""

    def read() -> dict[tuple[str, str, str], str]:
        return {
            (res, ns, name): obj["metadata"]["resourceVersion"]
            for res, table in twin.store.objects.items()
            for (ns, name), obj in table.items()
        }

    return twin.call(read)


def create_stray_deployment(b: KubernetesCluster, name: str = "stray") -> None:
    """A Deployment marked as Steward's but with no pool label: a contract violation."""
    client.AppsV1Api(b.api).create_namespaced_deployment(
        "default",
        {  # type: ignore[arg-type]
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": {"steward.dev/managed": "true"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
    )
