"""The twin enforces the manifests' own RBAC (docker/k8s/rbac.yaml as `kubectl kustomize
docker/` renders it) on Steward's service account: the backend observes and carries out every
primitive (scale of each workload kind, place, cordon, uncordon, drain, the gateway switch) and
holds its Lease under it; whatever the Roles do not grant is a 403 worded as Kubernetes words it.
And the Roles grant nothing the backend does not use: every (verb, group, resource, scope, name)
its requests used is recorded and compared with the grants, both ways.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lab.twin.auth import Attributes
from lab.twin.kubeconfig import kubeconfig_for
from lab.twin.rbac import CLUSTER, Grant, Rbac
from lab.twin.server import Twin
from lab.twin.shipped_rbac import SA, STEWARD_NS, enforcing, manifest_rbac
from tests.kubernetes.conftest import settings_for
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.kubernetes.lease import LeaseHolder, LeaseSettings


@pytest.fixture
def rbac_twin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Twin]:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with enforcing({"sa": SA}) as twin:
        yield twin


def as_steward(twin: Twin, tmp_path: Path) -> KubernetesCluster:
    cfg = kubeconfig_for(twin, "sa", tmp_path / "sa.kubeconfig")
    backend = KubernetesCluster(settings_for(twin, kubeconfig=cfg, server=None))
    backend.start()
    return backend


def admin_api(twin: Twin, tmp_path: Path) -> client.ApiClient:
    return KubernetesCluster(
        settings_for(twin, kubeconfig=kubeconfig_for(twin, "admin", tmp_path / "admin.kc"))
    ).api


def exercise(twin: Twin, backend: KubernetesCluster, tmp_path: Path) -> None:
    """Every primitive the backend has, each kind of workload, and the Lease's whole life."""
    state = backend.observe()
    kinds = {w.name: w.kind for w in state.workloads}
    assert backend.scale("render", 0).changed  # a StatefulSet
    assert backend.scale("worker", 0).changed  # a Deployment
    assert backend.scale("beast", 0, dry_run=True).ok  # a LeaderWorkerSet, checked by the server
    twin.advance(30)
    assert backend.place("burst-llm", "render-1").changed, kinds
    for workload in ("tts", "render", "beast"):
        assert backend.set_accepting(workload, False, dry_run=True).ok
    assert backend.cordon("gx10-b").changed and backend.uncordon("gx10-b").changed
    # A pod of another namespace on the node to drain: a drain evicts it too (cluster-wide).
    admin = client.CoreV1Api(admin_api(twin, tmp_path))
    admin.create_namespace({"metadata": {"name": "batch"}})  # type: ignore[arg-type]
    admin.create_namespaced_pod(
        "batch",
        {  # type: ignore[arg-type]
            "metadata": {"name": "etl"},
            "spec": {"nodeName": "ws-1", "containers": [{"name": "etl", "image": "etl"}]},
        },
    )
    assert backend.drain("ws-1", 3.0).outcome in ("drained", "deadline")
    lease = LeaseHolder(
        client.CoordinationV1Api(backend.api),
        LeaseSettings.of(
            backend.settings, {"STEWARD_NAMESPACE": STEWARD_NS, "STEWARD_IDENTITY": "steward-0"}
        ),
    )
    assert lease.attempt() and lease.attempt()  # created, then renewed
    lease.release()


def used(twin: Twin, user: str) -> set[Attributes]:
    return {a for a in twin.asked if a.user == user}


def covers(g: Grant, a: Attributes) -> bool:
    what = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    return (
        (g.verb, g.group, g.resource) == (a.verb, a.group, what)
        and g.scope in (CLUSTER, a.namespace)
        and g.name in ("", a.name)
    )


def test_the_backend_observes_acts_and_leads_under_the_manifests_rbac(
    rbac_twin: Twin, tmp_path: Path
) -> None:
    backend = as_steward(rbac_twin, tmp_path)
    try:
        exercise(rbac_twin, backend, tmp_path)
    finally:
        backend.close()
    refused = [(r.method, r.path) for r in rbac_twin.requests if r.status == 403]
    assert not refused
    assert {a.resource for a in used(rbac_twin, SA)} >= {"nodes", "pods", "leases", "deployments"}


def test_the_roles_grant_exactly_what_the_backend_uses(rbac_twin: Twin, tmp_path: Path) -> None:
    backend = as_steward(rbac_twin, tmp_path)
    try:
        exercise(rbac_twin, backend, tmp_path)
    finally:
        backend.close()
    asked = used(rbac_twin, SA)
    grants = Rbac.of(manifest_rbac(), STEWARD_NS).grants(SA)
    missing = sorted(f"{a.verb} {a.group}/{a.resource}/{a.subresource} in {a.namespace!r}"
                     for a in asked if not any(covers(g, a) for g in grants))  # fmt: skip
    assert not missing, f"the backend needs what the Roles do not grant: {missing}"
    unused = sorted(g for g in grants if not any(covers(g, a) for a in asked))
    assert not unused, f"the Roles grant what the backend never uses: {unused}"
    too_wide = sorted(
        g
        for g in grants
        if g.scope == CLUSTER
        and (spots := {a.namespace for a in asked if covers(g, a)})
        and len(spots) == 1
        and "" not in spots
    )
    assert not too_wide, f"granted cluster-wide, used in one namespace only: {too_wide}"


def test_what_the_roles_do_not_grant_is_a_403_worded_as_kubernetes_words_it(
    rbac_twin: Twin, tmp_path: Path
) -> None:
    api = client.CoreV1Api(
        KubernetesCluster(
            settings_for(rbac_twin, kubeconfig=kubeconfig_for(rbac_twin, "sa", tmp_path / "k"))
        ).api
    )
    with pytest.raises(ApiException) as denied:
        api.delete_namespaced_pod("tts-0", "default")
    assert denied.value.status == 403
    assert json.loads(str(denied.value.body))["message"] == (
        f'pods "tts-0" is forbidden: User "{SA}" cannot delete resource "pods" in API group "" '
        'in the namespace "default"'
    )
    apps = client.AppsV1Api(api.api_client)
    with pytest.raises(ApiException) as scale:
        apps.patch_namespaced_deployment_scale("tts", STEWARD_NS, {"spec": {"replicas": 0}})
    assert scale.value.status == 403
    assert json.loads(str(scale.value.body))["message"] == (
        f'deployments.apps "tts" is forbidden: User "{SA}" cannot patch resource '
        f'"deployments/scale" in API group "apps" in the namespace "{STEWARD_NS}"'
    )
