"""PodDisruptionBudgets in the twin: their status as Kubernetes' disruption controller keeps it.

After every step of the world each budget's status is worked out again over the pods its
selector matches: healthy pods, the pods it expects (the controllers' replicas for
`maxUnavailable` and percentages), and the disruptions it allows, which the Eviction API
answers by.
"""

from __future__ import annotations

from lab.twin.resources import DEPLOYMENT, PDB, POD, REPLICASET, STATEFULSET
from lab.twin.selectors import label_matcher
from lab.twin.store import Obj, Store


def update_budgets(store: Store) -> None:
    """Bring every PodDisruptionBudget's status up to the pods its selector matches now."""
    for (ns, name), pdb in list(store.table(PDB).items()):
        sel = pdb.get("spec", {}).get("selector", {}).get("matchLabels", {})
        match = label_matcher(",".join(f"{k}={v}" for k, v in sel.items()))
        pods = [p for (pns, _), p in store.table(POD).items() if pns == ns and match(p)]
        status = budget_status(pdb, pods, _scale_of(store, ns, pods))
        if pdb.get("status") != status:
            store.upsert(PDB, ns, name, {**pdb, "status": status})


def _scale_of(store: Store, ns: str, pods: list[Obj]) -> int | None:
    """The replicas the pods' controllers ask for, as the disruption controller counts them
    for `maxUnavailable` and percentages: a ReplicaSet's Deployment, a StatefulSet, each
    counted once. None when a pod has no controller this twin keeps (then pods are counted)."""
    kinds = {"ReplicaSet": REPLICASET, "StatefulSet": STATEFULSET, "Deployment": DEPLOYMENT}
    scales: dict[str, int] = {}
    for pod in pods:
        ref = next(
            (o for o in pod["metadata"].get("ownerReferences", []) if o.get("controller")), None
        )
        res = kinds.get(ref["kind"]) if ref else None
        owner = store.find(res, ns, ref["name"]) if ref and res else None
        if owner is None:
            return None
        if owner["kind"] == "ReplicaSet":
            up = next(
                (o for o in owner["metadata"].get("ownerReferences", []) if o.get("controller")),
                None,
            )
            deploy = store.find(DEPLOYMENT, ns, up["name"]) if up else None
            owner = deploy or owner
        scales[owner["kind"] + "/" + owner["metadata"]["name"]] = int(
            owner.get("spec", {}).get("replicas", 0)
        )
    return sum(scales.values())


def budget_status(pdb: Obj, pods: list[Obj], scale: int | None = None) -> Obj:
    """A PodDisruptionBudget's status over the pods its selector matches. `scale` is what the
    pods' controllers ask for: Kubernetes measures `maxUnavailable` (and a percentage
    `minAvailable`) against it, so a pod evicted and not yet replaced still counts as missing."""
    pods_now = len([p for p in pods if "deletionTimestamp" not in p["metadata"]])
    spec = pdb.get("spec", {})
    by_scale = "maxUnavailable" in spec or str(spec.get("minAvailable", "")).endswith("%")
    expected = scale if by_scale and scale is not None else pods_now
    healthy = sum(
        1
        for p in pods
        if "deletionTimestamp" not in p["metadata"]
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p.get("status", {}).get("conditions", [])
        )
    )
    if "minAvailable" in spec:
        desired = _count(spec["minAvailable"], expected)
    else:
        desired = expected - _count(spec.get("maxUnavailable", 0), expected)
    return {
        "currentHealthy": healthy,
        "desiredHealthy": max(0, desired),
        "disruptionsAllowed": max(0, healthy - max(0, desired)),
        "expectedPods": expected,
        "observedGeneration": pdb["metadata"].get("generation", 1),
    }


def _count(value: int | str, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return -(-int(value[:-1]) * total // 100)
    return int(value)
