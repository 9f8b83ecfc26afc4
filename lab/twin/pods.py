"""A simulated replica as the Pods a real cluster shows for it, and the scheduler's events.

One Pod per node of a replica (a LeaderWorkerSet's leader and workers), named as its controller
names them, with nodeName, GPU requests, ownerReferences, phase and conditions as the kubelet
reports them; a replica that found no node is a Pending pod whose PodScheduled condition says
why, with a FailedScheduling event as the default scheduler writes one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.sim.profiles import WorkloadSpec
from lab.twin.identity import fake_ip, stable_hash
from lab.twin.store import Obj

if TYPE_CHECKING:
    from lab.sim.state import Replica


def pod_names(spec: WorkloadSpec, index: int) -> list[str]:
    """The pods of one replica, as the workload's controller names them."""
    if spec.nodes_per_replica > 1:  # LeaderWorkerSet: leader NAME-I, workers NAME-I-K
        return [spec.name + f"-{index}"] + [
            f"{spec.name}-{index}-{k}" for k in range(1, spec.nodes_per_replica)
        ]
    if spec.kind == "render":
        return [f"{spec.name}-{index}"]
    return [f"{spec.name}-{stable_hash(spec.name, 10)}-{stable_hash(f'{spec.name}/{index}', 5)}"]


def owner_reference(obj: Obj) -> Obj:
    """The controller reference to `obj` that the objects it owns carry."""
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_object(
    spec: WorkloadSpec,
    r: Replica,
    name: str,
    *,
    k: int,
    node: str | None,
    cards: list[str],
    owner: Obj,
    namespace: str,
    template: Obj,
    at: str,
    reason: str,
) -> Obj:
    """Pod `name`, the `k`-th of replica `r` (on `node` with `cards`; Pending for `reason`
    when `node` is None), made from the workload's pod `template`, its times `at`."""
    labels = {**template["metadata"]["labels"], "steward.dev/replica": str(r.index)}
    if spec.nodes_per_replica > 1:
        labels["leaderworkerset.sigs.k8s.io/worker-index"] = str(k)
        labels["leaderworkerset.sigs.k8s.io/group-index"] = str(r.index)
        labels["leaderworkerset.sigs.k8s.io/name"] = spec.name
    elif spec.kind != "render":
        labels["pod-template-hash"] = stable_hash(spec.name, 10)
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "ownerReferences": [owner_reference(owner)],
    }
    if cards:
        meta["annotations"] = {"steward.dev/gpus": ",".join(cards)}
    pspec = {**template["spec"]}
    status: Obj = {"qosClass": "Burstable"}
    if node is None:
        status["phase"] = "Pending"
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": at,
                "message": reason,
            }
        ]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": pspec,
            "status": status,
        }
    pspec["nodeName"] = node
    ready = r.phase == "ready"
    if r.phase == "terminating":
        meta["deletionTimestamp"] = at
        meta["deletionGracePeriodSeconds"] = 120
    cond = "True" if ready else "False"
    status.update(
        {
            "phase": "Running",
            "hostIP": fake_ip(node),
            "podIP": fake_ip(name),
            "startTime": at,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at},
                {"type": "Initialized", "status": "True", "lastTransitionTime": at},
                {"type": "ContainersReady", "status": cond, "lastTransitionTime": at},
                {"type": "Ready", "status": cond, "lastTransitionTime": at},
            ],
            "containerStatuses": [
                {
                    "name": "server",
                    "ready": ready,
                    "restartCount": 0,
                    "started": True,
                    "image": template["spec"]["containers"][0]["image"],
                    "imageID": "",
                    "containerID": f"containerd://{stable_hash(name, 32)}",
                    "state": {"running": {"startedAt": at}},
                }
            ],
        }
    )
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pspec, "status": status}


def failed_scheduling(namespace: str, pod_name: str, pod: Obj, at: str) -> Obj:
    """The default scheduler's FailedScheduling event of Pending `pod`, said at `at`."""
    name = f"{pod_name}.failedscheduling"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {
            "kind": "Pod",
            "namespace": namespace,
            "name": pod_name,
            "uid": pod["metadata"].get("uid", ""),
            "apiVersion": "v1",
        },
        "reason": "FailedScheduling",
        "type": "Warning",
        "message": pod["status"]["conditions"][0]["message"],
        "source": {"component": "default-scheduler"},
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler",
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }
