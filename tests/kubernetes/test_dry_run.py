"""Dry run: every mutating request reaches the API server with dryRun=All and changes nothing."""

from __future__ import annotations

from lab.twin.server import Twin
from tests.kubernetes.conftest import versions
from tools.backends.kubernetes.backend import KubernetesCluster


def test_every_primitive_in_dry_run_leaves_every_resource_version_as_it_was(
    twin: Twin, backend: KubernetesCluster
) -> None:
    before = versions(twin)
    results = [
        backend.scale("render", 0, dry_run=True),
        backend.scale("tts", 2, dry_run=True),
        backend.cordon("ws-1", dry_run=True),
        backend.set_accepting("tts", False, dry_run=True),
        backend.place("beast", "gx10-a", dry_run=True),
        backend.drain("ws-1", 5.0, dry_run=True),
    ]
    assert all(r.dry_run and not r.changed for r in results)
    assert not results[4].ok and "no room" in results[4].message  # validated by the server
    assert versions(twin) == before
    mutating = [r for r in twin.requests if r.method in ("POST", "PUT", "PATCH", "DELETE")]
    assert len(mutating) >= 6  # scale x2, cordon, annotate x2, evictions
    assert all("dryRun=All" in r.query for r in mutating), [r.path for r in mutating]
    assert twin.call(lambda: twin.sim.engine.state.workloads["render"].desired) == 1
