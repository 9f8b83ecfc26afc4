"""Reading the Kubernetes API's own objects: quantities, times, pods, templates and replicas.

Pure functions over the JSON the API serves (dicts as parsed), shared by the observation
builder (observe.py) and the backend's actions (backend.py). No client, no state.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from tools.backends.kubernetes import contract as c
from tools.model import ReplicaPlacement, Sharing

Obj = dict[str, Any]


def quantity(value: object) -> int:
    """A resource quantity ("96Gi", "2", "1500m") in whole units; 0 when it does not parse."""
    if isinstance(value, int):
        return value
    return _quantity(str(value))


@functools.lru_cache(maxsize=4096)
def _quantity(text: str) -> int:
    """A cluster repeats a handful of quantities across thousands of objects: parse each once."""
    try:
        return int(Decimal(parse_quantity(text)))  # type: ignore[no-untyped-call]
    except (ValueError, TypeError):
        return 0


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def is_ready(pod: Obj) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(x.get("type") == "Ready" and x.get("status") == "True" for x in conds)


def ready_since(pod: Obj) -> datetime | None:
    for x in (pod.get("status") or {}).get("conditions") or []:
        if x.get("type") == "Ready" and x.get("status") == "True":
            return parse_time(x.get("lastTransitionTime"))
    return None


def pod_gpus(pod: Obj) -> int:
    total = 0
    for ctr in (pod.get("spec") or {}).get("containers") or []:
        res = ctr.get("resources") or {}
        got = (res.get("limits") or {}).get(c.GPU) or (res.get("requests") or {}).get(c.GPU)
        total += quantity(got) if got is not None else 0
    return total


def terminated(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def staying(pod: Obj) -> bool:
    """Neither ended nor marked for deletion: a pod that keeps its cards."""
    return not terminated(pod) and "deletionTimestamp" not in pod["metadata"]


def template_of(kind: str, obj: Obj) -> tuple[Obj, int]:
    """The pod template of a workload and how many pods make one replica."""
    spec = obj.get("spec") or {}
    if kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        return lwt.get("workerTemplate") or lwt.get("leaderTemplate") or {}, int(
            lwt.get("size") or 1
        )
    return spec.get("template") or {}, 1


def sharing(labels: dict[str, str], alloc: Obj) -> Sharing:
    migs = {k: quantity(v) for k, v in alloc.items() if k.startswith(c.MIG_PREFIX)}
    if migs:
        profile, count = max(migs.items(), key=lambda kv: kv[1])
        return Sharing(mode="mig", replicas=max(1, count), mig_profile=profile[len(c.MIG_PREFIX) :])
    strategy = labels.get(c.GFD_SHARING, "none")
    replicas = int(labels.get(c.GFD_REPLICAS) or 1)
    if strategy == "mps":
        return Sharing(mode="mps", replicas=max(1, replicas))
    if strategy == "time-slicing":
        return Sharing(mode="time-slicing", replicas=max(1, replicas))
    return Sharing()


def owner_workload(pod: Obj) -> str | None:
    labels = pod["metadata"].get("labels") or {}
    return labels.get(c.WORKLOAD) or labels.get(c.LWS_NAME)


def replica_index(pod: Obj) -> int:
    labels = pod["metadata"].get("labels") or {}
    for key in (c.REPLICA, c.LWS_GROUP):
        if labels.get(key, "").isdigit():
            return int(labels[key])
    tail = pod["metadata"]["name"].rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def replica_key(pod: Obj) -> tuple[int, int]:
    labels = pod["metadata"].get("labels") or {}
    worker = labels.get(c.LWS_WORKER, "0")
    return replica_index(pod), int(worker) if worker.isdigit() else 0


def client_of(pod: Obj) -> str | None:
    w = owner_workload(pod)
    return f"{w}/{replica_index(pod)}" if w else None


def placements(pods: list[Obj]) -> tuple[ReplicaPlacement, ...]:
    groups: dict[int, list[Obj]] = {}
    for p in sorted(pods, key=replica_key):
        if not terminated(p):
            groups.setdefault(replica_index(p), []).append(p)
    out = []
    for index, members in sorted(groups.items()):
        nodes = tuple(n for p in members if (n := (p.get("spec") or {}).get("nodeName")))
        gpus = tuple(
            u
            for p in members
            for u in ((p["metadata"].get("annotations") or {}).get(c.GPUS) or "").split(",")
            if u
        )
        ready = all(is_ready(p) and "deletionTimestamp" not in p["metadata"] for p in members)
        unbound = [
            at
            for p in members
            if not (p.get("spec") or {}).get("nodeName")
            and (at := parse_time(p["metadata"].get("creationTimestamp"))) is not None
        ]
        out.append(
            ReplicaPlacement(
                index=index,
                nodes=nodes,
                gpus=gpus,
                ready=ready,
                waiting_since=min(unbound) if unbound and not nodes else None,
            )
        )
    return tuple(out)
