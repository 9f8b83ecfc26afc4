"""Each primitive through the official client changes the simulated world as it says, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.auth import Attributes
from lab.twin.server import Twin
from tests.kubernetes.conftest import open_backend
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.errors import InvalidInput, PermanentError


def test_scale_goes_through_the_scale_subresource(twin: Twin, backend: KubernetesCluster) -> None:
    result = backend.scale("render", 0)
    assert result.ok and result.changed
    assert twin.call(lambda: twin.sim.engine.state.workloads["render"].desired) == 0
    paths = [r.path for r in twin.requests if r.method == "PATCH"]
    assert paths == ["/apis/apps/v1/namespaces/default/statefulsets/render/scale"]
    assert backend.scale("render", 0).changed is False  # already there: nothing sent
    assert len([r for r in twin.requests if r.method == "PATCH"]) == 1


def test_a_stale_scale_is_refused_then_read_again(twin: Twin, backend: KubernetesCluster) -> None:
    """Optimistic concurrency: a scale patched at an old resourceVersion is a 409; the backend
    reads the scale again and succeeds."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    apps = client.AppsV1Api(backend.api)
    old = apps.read_namespaced_deployment_scale("worker", "default").metadata.resource_version  # type: ignore[union-attr]
    apps.patch_namespaced_deployment("worker", "default", {"metadata": {"labels": {"x": "1"}}})
    with pytest.raises(ApiException) as stale:
        stale_body = {"metadata": {"resourceVersion": old}, "spec": {"replicas": 0}}
        apps.patch_namespaced_deployment_scale("worker", "default", stale_body)
    assert stale.value.status == 409
    assert twin.call(lambda: twin.sim.engine.state.workloads["worker"].desired) == 1
    assert backend.scale("worker", 0).changed
    assert twin.call(lambda: twin.sim.engine.state.workloads["worker"].desired) == 0


def test_a_scale_up_that_cannot_be_placed_is_refused_before_it_is_sent(
    twin: Twin, backend: KubernetesCluster
) -> None:
    """burst-llm's node is full (render holds both cards): a Pending replica would wait forever."""
    result = backend.scale("burst-llm", 1)
    assert not result.ok and "no room" in result.message and "render-1" in result.message
    assert twin.call(lambda: twin.sim.engine.state.workloads["burst-llm"].desired) == 0


def test_a_scale_up_waits_for_the_cards_a_scale_down_just_gave_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One decision gives render-1 back (render to 0) and starts burst-llm there in its next
    step. The cards are free once render's controller marks its pod for deletion, a moment
    after the write (here 0.3 s): the scale-up waits for that instead of being refused."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    with Twin(SimCluster(default_day()), controller_lag_s=0.3) as twin:
        backend = open_backend(twin)
        try:
            assert backend.scale("render", 0).ok
            result = backend.scale("burst-llm", 1)
            assert result.ok, result.message
            assert twin.call(lambda: twin.sim.engine.state.workloads["burst-llm"].desired) == 1
        finally:
            backend.close()


def test_cordon_and_uncordon_patch_the_node(twin: Twin, backend: KubernetesCluster) -> None:
    assert backend.cordon("ws-1").changed
    assert twin.call(lambda: twin.sim.engine.state.nodes["ws-1"].cordoned)
    node = backend.observe().node("ws-1")
    assert node is not None and node.cordoned and not node.schedulable
    assert backend.uncordon("ws-1").changed
    assert not twin.call(lambda: twin.sim.engine.state.nodes["ws-1"].cordoned)


def test_the_gateway_switch_is_an_annotation_the_gateway_honours(
    twin: Twin, backend: KubernetesCluster
) -> None:
    assert backend.set_accepting("tts", False).changed
    assert twin.call(lambda: twin.sim.engine.state.workloads["tts"].accepting) is False
    tts = backend.observe().workload("tts")
    assert tts is not None and tts.annotations.get("steward.dev/accepting") == "false"
    assert backend.set_accepting("tts", True).changed
    assert twin.call(lambda: twin.sim.engine.state.workloads["tts"].accepting) is True


def test_place_starts_one_replica_on_the_named_node(twin: Twin, backend: KubernetesCluster) -> None:
    assert backend.scale("render", 0).ok
    twin.advance(30)
    result = backend.place("burst-llm", "render-1")
    assert result.ok and result.changed
    run = twin.call(lambda: twin.sim.engine.state.workloads["burst-llm"])
    assert run.desired == 1 and [r.nodes for r in run.replicas] == [["render-1"]]


def test_the_probe_is_a_real_chat_completion(twin: Twin, backend: KubernetesCluster) -> None:
    probe = backend.probe("beast")
    expected = twin.call(lambda: twin.sim.probe("beast"))
    assert probe.ok and probe.tokens_per_s == expected.tokens_per_s
    assert probe.context_length == expected.context_length == 1_048_576
    assert abs((probe.latency_s or 0) - (expected.latency_s or 0)) < 0.01
    assert not backend.probe("resident-a").ok  # scaled to zero: nobody answers
    assert backend.in_flight("tts") == twin.call(lambda: twin.sim.in_flight("tts"))


def test_a_name_that_does_not_exist_is_bad_input(backend: KubernetesCluster) -> None:
    with pytest.raises(InvalidInput, match="no workload named 'nope'"):
        backend.scale("nope", 1)
    with pytest.raises(InvalidInput, match="no node named 'nope'"):
        backend.cordon("nope")


class DenyNodePatches:
    def allowed(self, attrs: Attributes) -> bool:
        return not (attrs.resource == "nodes" and attrs.verb == "patch")


def test_forbidden_is_permanent_and_names_verb_resource_and_scope(twin: Twin) -> None:
    twin.authorizer = DenyNodePatches()
    b = open_backend(twin)
    try:
        with pytest.raises(PermanentError, match="forbidden to patch nodes") as caught:
            b.cordon("ws-1")
        assert "cluster scope" in str(caught.value)
        assert len([r for r in twin.requests if r.method == "PATCH"]) == 1  # not retried
    finally:
        b.close()
