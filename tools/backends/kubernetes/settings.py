"""The `kubernetes` section of steward.yaml: which cluster, which namespace, how patient.

The cluster is found as kubectl finds it: `kubeconfig` (else $KUBECONFIG, else ~/.kube/config)
and its `context` (else the current one); `in_cluster` uses the pod's service account; `server`
overrides the API server's URL (as `kubectl --server`, e.g. for the twin on loopback).
`leader_election` says which Lease the replicas contend for and how patient they are
(agent/support/leadership.py, tools/backends/kubernetes/lease.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator


class LeaderElection(BaseModel):
    """Which Lease decides who acts, and its timings (docs/kubernetes.md, "Leader election").

    A replica renews every `retry_period_s`; it stops acting once `renew_deadline_s` passed
    without a renewal, before the Lease (`lease_duration_s`) can expire and a standby take over;
    a standby takes over once the Lease stood unrenewed for `lease_duration_s`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lease: str = Field(default="steward-leader", min_length=1, max_length=253)
    namespace: str | None = None
    """Where the Lease lives. None: $STEWARD_NAMESPACE (the pod's own namespace, set by the
    StatefulSet), else `kubernetes.namespace`."""
    identity: str | None = None
    """This replica's name in the Lease. None: $STEWARD_IDENTITY (the pod's name), else the
    host name."""
    lease_duration_s: int = Field(default=15, ge=2, le=3600)
    """leaseDurationSeconds: whole seconds, as the Lease API keeps them."""
    renew_deadline_s: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    retry_period_s: float = Field(default=2.0, gt=0, allow_inf_nan=False)

    @field_validator("renew_deadline_s", "retry_period_s")
    @classmethod
    def _in_order(cls, value: float, info: ValidationInfo) -> float:
        above, why = ORDER[str(info.field_name)]
        bound = info.data.get(above)
        if bound is not None and value >= bound:
            raise ValueError(f"must be below {above} ({bound:g}): {why}")
        return value


ORDER = {
    "renew_deadline_s": (
        "lease_duration_s",
        "a leader must stop acting before its Lease can expire and a standby take over",
    ),
    "retry_period_s": ("renew_deadline_s", "a leader must get to try again before it has to stop"),
}


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
    leader_election: LeaderElection = LeaderElection()
