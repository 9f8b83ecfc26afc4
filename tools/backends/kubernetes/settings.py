"""The `kubernetes` section of steward.yaml: which cluster, which namespace, how patient.

The cluster is found as kubectl finds it: `kubeconfig` (else $KUBECONFIG, else ~/.kube/config)
and its `context` (else the current one); `in_cluster` uses the pod's service account; `server`
overrides the API server's URL (as `kubectl --server`, e.g. for the twin on loopback).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class KubernetesSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kubeconfig: Path | None = None
    context: str | None = None
    in_cluster: bool | Literal["auto"] = "auto"
    """auto: in-cluster when running in a pod (KUBERNETES_SERVICE_HOST) and no kubeconfig."""
    server: str | None = None
    namespace: str = "default"
    """Where Steward's workloads, their PDBs and the topology ConfigMap live."""
    topology_configmap: str = "steward-topology"
    request_timeout_s: float = Field(default=10.0, gt=0)
    retry_attempts: int = Field(default=6, ge=1, le=50)
    """Tries of one call on 429 / 5xx / timeouts / conflicts before it gives up."""
    retry_max_wait_s: float = Field(default=2.0, gt=0)
    eviction_retry_s: float = Field(default=2.0, gt=0)
    """How long a drain waits before asking again for an eviction the PDB refused (429)."""
    sync_timeout_s: float = Field(default=60.0, gt=0)
    """How long the first observe waits for the watch caches' initial lists."""
    pending_release_s: float = Field(default=300.0, gt=0)
    """A replica a scale-up added that stays unschedulable this long is released."""
