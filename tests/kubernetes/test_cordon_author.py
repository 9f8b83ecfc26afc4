"""Who cordoned a node is on the node: Steward marks its own cordons (steward.dev/cordoned-by),
a person's `kubectl cordon` does not, and the backend and the twin read it back as such."""

from __future__ import annotations

from lab.twin.resources import NODE
from lab.twin.server import Twin
from tests.kubernetes.conftest import kubectl
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.kubernetes.contract import CORDONED_BY, STEWARD


def _node(twin: Twin, backend: KubernetesCluster, name: str) -> tuple[bool, bool]:
    """(cordoned, by Steward) as the backend observes it once its node cache caught up."""
    backend.caches["nodes"].wait_rv(int(twin.store.rv), 5.0)
    node = backend.observe().node(name)
    assert node is not None
    return node.cordoned, node.cordoned_by_steward


def test_stewards_cordon_is_marked_and_a_persons_is_not(
    twin: Twin, backend: KubernetesCluster
) -> None:
    assert backend.cordon("render-1").changed
    person = kubectl(twin, "cordon", "gx10-a")
    assert person.returncode == 0, person.stderr

    obj = twin.call(lambda: twin.store.find(NODE, "", "render-1"))
    assert obj is not None and obj["metadata"]["annotations"].get(CORDONED_BY) == STEWARD
    assert twin.call(lambda: twin.sim.engine.state.nodes["render-1"].cordoned_by_steward)
    assert not twin.call(lambda: twin.sim.engine.state.nodes["gx10-a"].cordoned_by_steward)
    assert _node(twin, backend, "render-1") == (True, True)
    assert _node(twin, backend, "gx10-a") == (True, False)


def test_an_uncordon_takes_the_mark_away(twin: Twin, backend: KubernetesCluster) -> None:
    backend.cordon("render-1")
    assert backend.uncordon("render-1").changed

    assert _node(twin, backend, "render-1") == (False, False)
    again = kubectl(twin, "cordon", "render-1")  # a person's cordon now: not Steward's
    assert again.returncode == 0, again.stderr
    assert not twin.call(lambda: twin.sim.engine.state.nodes["render-1"].cordoned_by_steward)
