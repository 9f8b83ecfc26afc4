"""`meta.k8s.io/v1` Tables: what kubectl prints for `get`, as the API server's printers make.

kubectl asks for `as=Table`; the columns here are the server's for nodes, pods, workloads,
PDBs, leases and events (NAME and AGE for the rest).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lab.twin.resources import Resource
from lab.twin.store import Obj


def _age(obj: Obj, now: datetime) -> str:
    created = obj.get("metadata", {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    then = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=now.tzinfo)
    s = max(0, int((now - then).total_seconds()))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _ready(obj: Obj) -> bool:
    conds = obj.get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _row(res: Resource, obj: Obj, now: datetime) -> list[Any]:
    meta, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status", {})
    name, age = meta.get("name", ""), _age(obj, now)
    if res.kind == "Node":
        state = "Ready" if _ready(obj) else "NotReady"
        if spec.get("unschedulable"):
            state += ",SchedulingDisabled"
        roles = (
            ",".join(
                k.split("/", 1)[1] for k in meta.get("labels", {}) if k.startswith("node-role.")
            )
            or "<none>"
        )
        return [name, state, roles, age, status.get("nodeInfo", {}).get("kubeletVersion", "")]
    if res.kind == "Pod":
        containers = spec.get("containers", [])
        up = sum(1 for c in status.get("containerStatuses", []) if c.get("ready"))
        phase = "Terminating" if "deletionTimestamp" in meta else status.get("phase", "")
        return [name, f"{up}/{len(containers)}", phase, 0, age]
    if res.kind in ("Deployment", "StatefulSet", "ReplicaSet", "LeaderWorkerSet"):
        ready = f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}"
        if res.kind == "Deployment":
            return [
                name,
                ready,
                status.get("updatedReplicas", 0),
                status.get("availableReplicas", 0),
                age,
            ]
        return [name, ready, age]
    if res.kind == "PodDisruptionBudget":
        return [
            name,
            spec.get("minAvailable", "N/A"),
            spec.get("maxUnavailable", "N/A"),
            status.get("disruptionsAllowed", 0),
            age,
        ]
    if res.kind == "Lease":
        return [name, spec.get("holderIdentity", ""), age]
    if res.kind == "Event":
        return [
            obj.get("lastTimestamp", ""),
            obj.get("type", ""),
            obj.get("reason", ""),
            f"{obj.get('involvedObject', {}).get('kind', '').lower()}/"
            f"{obj.get('involvedObject', {}).get('name', '')}",
            obj.get("message", ""),
        ]
    return [name, age]


def _columns(res: Resource) -> list[str]:
    by_kind = {
        "Node": ["Name", "Status", "Roles", "Age", "Version"],
        "Pod": ["Name", "Ready", "Status", "Restarts", "Age"],
        "Deployment": ["Name", "Ready", "Up-to-date", "Available", "Age"],
        "StatefulSet": ["Name", "Ready", "Age"],
        "ReplicaSet": ["Name", "Ready", "Age"],
        "LeaderWorkerSet": ["Name", "Ready", "Age"],
        "PodDisruptionBudget": [
            "Name",
            "Min Available",
            "Max Unavailable",
            "Allowed Disruptions",
            "Age",
        ],
        "Lease": ["Name", "Holder", "Age"],
        "Event": ["Last Seen", "Type", "Reason", "Object", "Message"],
    }
    return by_kind.get(res.kind, ["Name", "Age"])


def table(res: Resource, objs: list[Obj], rv: str, now: datetime) -> Obj:
    cols = _columns(res)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv},
        "columnDefinitions": [
            {
                "name": c,
                "type": "integer" if c == "Restarts" else "string",
                "format": "name" if c == "Name" else "",
                "description": c,
                "priority": 0,
            }
            for c in cols
        ],
        "rows": [
            {
                "cells": _row(res, o, now),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o.get("metadata", {}),
                },
            }
            for o in objs
        ],
    }
