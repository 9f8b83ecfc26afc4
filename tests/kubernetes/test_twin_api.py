"""The twin speaks the API faithfully where clients depend on it: resourceVersion conflicts,
Leases with PUT (leader election, issue 13), selectors, patches, watch with bookmarks and 410."""

from __future__ import annotations

import copy
from collections import deque
from datetime import UTC, datetime

import httpx
import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from lab.twin.resources import NODE
from lab.twin.server import Twin
from tests.kubernetes.conftest import settings_for
from tools.backends.kubernetes.connect import api_client


@pytest.fixture
def api(twin: Twin) -> client.ApiClient:
    return api_client(settings_for(twin))


def lease(name: str, holder: str) -> dict[str, object]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "renewTime": datetime.now(UTC).isoformat(),
        },
    }


def test_leases_support_create_get_replace_and_refuse_a_stale_update(
    api: client.ApiClient,
) -> None:
    coord = client.CoordinationV1Api(api)
    created = coord.create_namespaced_lease("default", lease("steward", "a"))  # type: ignore[arg-type]
    assert created.metadata and created.metadata.resource_version
    got = coord.read_namespaced_lease("steward", "default")
    assert got.spec and got.spec.holder_identity == "a"
    got.spec.holder_identity = "b"
    renewed = coord.replace_namespaced_lease("steward", "default", got)
    assert renewed.spec and renewed.spec.holder_identity == "b"
    got.spec.holder_identity = "c"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as stale:
        coord.replace_namespaced_lease("steward", "default", got)
    assert stale.value.status == 409
    with pytest.raises(ApiException) as dup:
        coord.create_namespaced_lease("default", lease("steward", "z"))  # type: ignore[arg-type]
    assert dup.value.status == 409 and "AlreadyExists" in (stale.value.body or "") + (
        dup.value.body or ""
    )
    coord.delete_namespaced_lease("steward", "default")
    with pytest.raises(ApiException) as gone:
        coord.read_namespaced_lease("steward", "default")
    assert gone.value.status == 404


def test_label_and_field_selectors(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    on_ws = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=ws-1")
    assert {p.spec.node_name for p in on_ws.items if p.spec} == {"ws-1"}
    gx10 = core.list_node(label_selector="steward.dev/group in (gx10),!nope")
    assert sorted(n.metadata.name for n in gx10.items if n.metadata) == ["gx10-a", "gx10-b"]  # type: ignore[type-var]
    with pytest.raises(ApiException) as bad:
        core.list_node(label_selector="a in (b")
    assert bad.value.status == 400


def test_json_patch_and_merge_patch(api: client.ApiClient, twin: Twin) -> None:
    core = client.CoreV1Api(api)
    core.patch_node("ws-1", [{"op": "add", "path": "/metadata/labels/team", "value": "ml"}])
    node = core.read_node("ws-1")
    assert node.metadata and (node.metadata.labels or {}).get("team") == "ml"
    core.patch_node("ws-1", {"spec": {"unschedulable": True}})
    assert twin.call(lambda: twin.sim.engine.state.nodes["ws-1"].cordoned)


def test_watch_resumes_from_a_version_and_sends_bookmarks(
    api: client.ApiClient, twin: Twin
) -> None:
    core = client.CoreV1Api(api)
    rv = core.list_node().metadata.resource_version  # type: ignore[union-attr]
    core.patch_node("gx10-b", {"spec": {"unschedulable": True}})
    w = watch.Watch()  # type: ignore[no-untyped-call]
    seen = []
    for event in w.stream(  # type: ignore[no-untyped-call]
        core.list_node, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=5
    ):
        seen.append(event["type"])
        if event["type"] == "BOOKMARK":
            break
    w.stop()  # type: ignore[no-untyped-call]
    assert seen[0] == "MODIFIED" and seen[-1] == "BOOKMARK"


def test_a_watch_from_a_version_no_longer_kept_is_410_gone(
    api: client.ApiClient, twin: Twin
) -> None:
    def churn() -> None:  # on the twin's loop: keep five events, then make ten
        twin.store.history = deque(twin.store.history, maxlen=5)
        for i in range(10):
            obj = copy.deepcopy(twin.store.get(NODE, "", "ws-1"))
            obj["metadata"]["labels"]["tick"] = str(i)
            twin.store.upsert(NODE, "", "ws-1", obj)

    twin.call(churn)
    w = watch.Watch()  # type: ignore[no-untyped-call]
    with pytest.raises(ApiException) as gone:
        for _ in w.stream(client.CoreV1Api(api).list_node, resource_version="2", timeout_seconds=2):  # type: ignore[no-untyped-call]
            pass
    assert gone.value.status == 410


def test_the_request_log_records_dry_run(api: client.ApiClient, twin: Twin) -> None:
    client.CoreV1Api(api).patch_node("ws-1", {"spec": {"unschedulable": True}}, dry_run="All")
    assert not twin.call(lambda: twin.sim.engine.state.nodes["ws-1"].cordoned)
    last = twin.requests[-1]
    assert (last.method, last.dry_run, last.status) == ("PATCH", True, 200)


def test_the_hooks_drive_the_world_from_another_process(twin: Twin) -> None:
    """What lab/bench/twin_process.py relies on: advance and heartbeats over loopback, each
    answering with the resourceVersion it reached."""
    before = int(twin.store.rv)
    elapsed = twin.call(lambda: twin.sim.elapsed_s)
    advanced = httpx.post(f"{twin.url}/twin/advance", params={"seconds": 15}).json()
    assert advanced["elapsed_s"] == pytest.approx(elapsed + 15)
    assert int(advanced["resourceVersion"]) >= before  # a quiet world may publish nothing
    beat = httpx.post(f"{twin.url}/twin/heartbeat", json={"nodes": ["ws-1"]}).json()
    assert int(beat["resourceVersion"]) == int(advanced["resourceVersion"]) + 1
    node = twin.call(lambda: twin.store.get(NODE, "", "ws-1"))
    assert node["metadata"]["resourceVersion"] == beat["resourceVersion"]
    bad = httpx.post(f"{twin.url}/twin/heartbeat", json={"nodes": "ws-1"})
    assert bad.status_code == 400
