"""The Kubernetes backend: Steward's Cluster protocol over the official `kubernetes` client.

`open_cluster` is what the composition root calls (agent/daemon/compose.py); the client and the
watch machinery load only then.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tools.backends.kubernetes.settings import KubernetesSettings

if TYPE_CHECKING:
    from tools.backends.kubernetes.backend import KubernetesCluster
    from tools.backends.kubernetes.lease import LeaseHolder


def open_cluster(settings: KubernetesSettings, data_dir: Path) -> KubernetesCluster:
    """The cluster the settings name, its caches filled (bad settings: InvalidInput)."""
    from tools.backends.kubernetes.backend import KubernetesCluster

    del data_dir  # the cluster keeps its own state: nothing of it lives in the data dir
    cluster = KubernetesCluster(settings)
    cluster.start()
    return cluster


def open_lease(cluster: KubernetesCluster) -> LeaseHolder:
    """This replica's hold on the leader Lease the cluster's settings name
    (`kubernetes.leader_election`), over the cluster's own API client; nothing is asked of the
    API server until its first `attempt()`."""
    from kubernetes import client

    from tools.backends.kubernetes.lease import LeaseHolder, LeaseSettings

    return LeaseHolder(client.CoordinationV1Api(cluster.api), LeaseSettings.of(cluster.settings))
