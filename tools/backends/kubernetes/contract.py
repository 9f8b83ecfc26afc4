"""The label and annotation contract between a cluster and Steward (docs/kubernetes.md).

A workload (Deployment, StatefulSet or LeaderWorkerSet) is Steward's when it carries
`steward.dev/managed: "true"`; it must then say its pool (`steward.dev/pool`), and may say its
kind, mode, model, context, serving endpoint and gateway state. The mode pairs and their links
are read from node labels, the modes from the workloads' (tools/backends/kubernetes/topology.py);
the `steward-topology` ConfigMap of Steward's namespace names the pools and may override both.
"""

from __future__ import annotations

MANAGED = "steward.dev/managed"
POOL = "steward.dev/pool"
KIND = "steward.dev/kind"
MODE = "steward.dev/mode"
MODEL = "steward.dev/model"
CONTEXT = "steward.dev/context-length"
ENDPOINT = "steward.dev/endpoint"
ACCEPTING = "steward.dev/accepting"
PLACE = "steward.dev/place"
REPLICA = "steward.dev/replica"
GPUS = "steward.dev/gpus"
UNIFIED = "steward.dev/unified-memory"
WORKLOAD = "steward.dev/workload"
MODE_PAIR = "steward.dev/mode-pair"
LINK_GBPS = "steward.dev/link-gbps"
LINK_PATHS = "steward.dev/link-paths"
GID_INDEX = "steward.dev/gid-index"
PEAK_TOK_S = "steward.dev/peak-tok-s"
SINGLE_TOK_S = "steward.dev/single-stream-tok-s"
CORDONED_BY = "steward.dev/cordoned-by"
"""On a Node Steward cordoned (or drained) itself, the value STEWARD: a cordon it may lift when
it needs the capacity again. A cordon without it is someone else's (a person's)."""
STEWARD = "steward"

OWN_ANNOTATIONS = frozenset({MODEL, CONTEXT, ENDPOINT, PLACE, PEAK_TOK_S, SINGLE_TOK_S})
"""Read into the Workload's fields (or its mode's), so left out of its free-text annotations."""

GPU = "nvidia.com/gpu"
GFD_COUNT = "nvidia.com/gpu.count"
GFD_PRODUCT = "nvidia.com/gpu.product"
GFD_MEMORY = "nvidia.com/gpu.memory"
GFD_REPLICAS = "nvidia.com/gpu.replicas"
GFD_SHARING = "nvidia.com/gpu.sharing-strategy"
MIG_PREFIX = "nvidia.com/mig-"
DRA_DRIVER = "gpu.nvidia.com"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER = "leaderworkerset.sigs.k8s.io/worker-index"
KINDS = ("inference", "render", "tts", "batch")
