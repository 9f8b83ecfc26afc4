"""The API resources the twin serves: group, version, kind, scope and verbs of each.

One table drives discovery (/api/v1, /apis/G/V), URL routing and the shapes of list objects,
so what kubectl discovers is exactly what the twin answers. Names and verbs follow the real
API server's discovery documents (Kubernetes 1.32).
"""

from __future__ import annotations

from dataclasses import dataclass

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True, slots=True)
class Resource:
    group: str
    """"" for the core group."""
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    """Subresources served under it: scale, status, eviction."""
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version


RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "namespaces", "Namespace", False, ("ns",), subresources=("status",)),
    Resource("", "v1", "nodes", "Node", False, ("no",), subresources=("status",)),
    Resource(
        "",
        "v1",
        "pods",
        "Pod",
        True,
        ("po",),
        subresources=("status", "eviction"),
        categories=("all",),
    ),
    Resource("", "v1", "events", "Event", True, ("ev",)),
    Resource("", "v1", "services", "Service", True, ("svc",), categories=("all",)),
    Resource("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    Resource("", "v1", "secrets", "Secret", True),
    Resource("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    Resource(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        True,
        ("deploy",),
        subresources=("scale", "status"),
        categories=("all",),
    ),
    Resource(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        True,
        ("sts",),
        subresources=("scale", "status"),
        categories=("all",),
    ),
    Resource(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        True,
        ("rs",),
        subresources=("scale", "status"),
        categories=("all",),
    ),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), subresources=("status",)),
    Resource(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        ("pdb",),
        subresources=("status",),
    ),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
    # Steward's own manifests (docker/): kept as written, for `kubectl apply -k docker/`; the
    # twin's authorizer (lab/twin/rbac.py) reads Roles from a manifest, not from these.
    Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    Resource("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    Resource("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True),
    Resource(
        "leaderworkerset.x-k8s.io",
        "v1",
        "leaderworkersets",
        "LeaderWorkerSet",
        True,
        ("lws",),
        subresources=("scale", "status"),
    ),
)

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}


def find(group: str, version: str, plural: str) -> Resource | None:
    return _BY_PATH.get((group, version, plural))


def by_kind(kind: str, group: str = "") -> Resource:
    return next(r for r in RESOURCES if r.kind == kind and r.group == group)


NODE = by_kind("Node")
POD = by_kind("Pod")
EVENT = by_kind("Event")
SERVICE = by_kind("Service")
CONFIGMAP = by_kind("ConfigMap")
NAMESPACE = by_kind("Namespace")
DEPLOYMENT = by_kind("Deployment", "apps")
STATEFULSET = by_kind("StatefulSet", "apps")
REPLICASET = by_kind("ReplicaSet", "apps")
DAEMONSET = by_kind("DaemonSet", "apps")
PDB = by_kind("PodDisruptionBudget", "policy")
SLICE = by_kind("ResourceSlice", "resource.k8s.io")
LWS = by_kind("LeaderWorkerSet", "leaderworkerset.x-k8s.io")
LEASE = by_kind("Lease", "coordination.k8s.io")


def group_versions() -> dict[str, list[str]]:
    """Named groups (the core group is served at /api) and their versions."""
    found: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in found.setdefault(r.group, []):
            found[r.group].append(r.version)
    return found


def resource_list(group: str, version: str) -> dict[str, object] | None:
    """The APIResourceList discovery document of one group version."""
    items = [r for r in RESOURCES if r.group == group and r.version == version]
    if not items:
        return None
    entries: list[dict[str, object]] = []
    for r in items:
        entry: dict[str, object] = {
            "name": r.plural,
            "singularName": r.kind.lower(),
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        entries.append(entry)
        for sub in r.subresources:
            kind, verbs = r.kind, ["get", "patch", "update"]
            if sub == "scale":
                kind = "Scale"
                entries.append(
                    {
                        "name": f"{r.plural}/scale",
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": kind,
                        "verbs": verbs,
                    }
                )
                continue
            if sub == "eviction":
                entries.append(
                    {
                        "name": f"{r.plural}/eviction",
                        "singularName": "",
                        "namespaced": True,
                        "group": "policy",
                        "version": "v1",
                        "kind": "Eviction",
                        "verbs": ["create"],
                    }
                )
                continue
            entries.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": entries,
    }
