"""The twin's nodes as the Kubernetes API shows them: Node objects, ResourceSlices, and the
NVIDIA device plugin's DaemonSet with a pod on every node.

A Node carries its own labels, the GPU feature discovery labels and its zone; cordoned, it is
`spec.unschedulable` with the unschedulable taint; lost, Ready=Unknown with the unreachable
taint. Its allocatable `nvidia.com/gpu` is what the device plugin advertises (MPS replicas, or
the physical count when the plugin does not advertise them: the seeds' double count). Its cards
are a DRA ResourceSlice (driver gpu.nvidia.com, one device per card with its UUID, index,
product and memory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lab.sim.profiles import GIB
from lab.twin.identity import fake_ip, stable_hash
from lab.twin.store import Obj, rfc3339
from tools.backends.kubernetes.contract import CORDONED_BY, STEWARD

if TYPE_CHECKING:
    from lab.sim.backend import SimCluster

GPU = "nvidia.com/gpu"
DRIVER = "gpu.nvidia.com"
KUBELET_VERSION = "v1.32.4"
SYSTEM = "kube-system"


def node_object(sim: SimCluster, name: str, counts: tuple[int, int], existing: Obj | None) -> Obj:
    """The Node object of simulated node `name`; `existing` is the one in the store, whose
    Ready transition and taint times are kept while they hold."""
    eng = sim.engine
    spec = eng.placer.nodes[name]
    run = eng.state.nodes[name]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64" if spec.unified_memory else "amd64",
        **spec.labels,
    }
    if spec.unified_memory:
        labels["steward.dev/unified-memory"] = "true"
    for link in eng.profile.links:  # the mode pair's labels (tools/backends/kubernetes/topology.py)
        if name in link.nodes and link.paths:
            labels["steward.dev/mode-pair"] = link.name
            labels["steward.dev/link-gbps"] = f"{link.paths[0].nominal_gbps:g}"
            labels["steward.dev/link-paths"] = str(len(link.paths))
            if link.gid_index is not None:
                labels["steward.dev/gid-index"] = str(link.gid_index)
    if spec.cards:
        card = spec.cards[0]
        sharing = card.sharing
        labels.update(
            {
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.count": str(len(spec.cards)),
                "nvidia.com/gpu.product": card.model.replace(" ", "-"),
                "nvidia.com/gpu.memory": str(card.memory_bytes // 2**20),
                "nvidia.com/gpu.replicas": str(sharing.replicas),
                "nvidia.com/gpu.sharing-strategy": {"exclusive": "none"}.get(
                    sharing.mode, sharing.mode
                ),
            }
        )
    taints: list[Obj] = []
    now = rfc3339(sim.now)
    if run.lost:
        taints.append(
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": now}
        )
        taints.append(
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": now}
        )
    if run.cordoned:
        taints.append(
            {
                "key": "node.kubernetes.io/unschedulable",
                "effect": "NoSchedule",
                "timeAdded": now,
            }
        )
    resources = {
        "cpu": "64",
        "memory": f"{spec.memory_bytes // 1024}Ki",
        "pods": "110",
        "ephemeral-storage": "1Ti",
    }
    if spec.cards:
        resources[GPU] = str(counts[0])
    ready = (
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
        }
        if run.lost
        else {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    )
    ready["lastHeartbeatTime"] = ready["lastTransitionTime"] = now
    if existing is not None:  # keep the transition time while the status holds
        old = next(c for c in existing["status"]["conditions"] if c["type"] == "Ready")
        if old["status"] == ready["status"]:
            ready["lastHeartbeatTime"] = old["lastHeartbeatTime"]
            ready["lastTransitionTime"] = old["lastTransitionTime"]
        for taint in taints:
            same = next(
                (
                    x
                    for x in existing["spec"].get("taints", [])
                    if x["key"] == taint["key"] and x["effect"] == taint["effect"]
                ),
                None,
            )
            if same:
                taint["timeAdded"] = same.get("timeAdded", now)
    node_spec: Obj = {"providerID": f"steward-twin://{name}"}
    if run.cordoned:
        node_spec["unschedulable"] = True
    if taints:
        node_spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                **({CORDONED_BY: STEWARD} if run.cordoned and run.cordoned_by_steward else {}),
            },
        },
        "spec": node_spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": resources,
            "conditions": [ready],
            "addresses": [
                {"type": "Hostname", "address": name},
                {"type": "InternalIP", "address": fake_ip(name)},
            ],
            "nodeInfo": {
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "containerRuntimeVersion": "containerd://1.7.24",
                "osImage": "Ubuntu 24.04",
                "kernelVersion": "6.8.0",
                "operatingSystem": "linux",
                "architecture": labels["kubernetes.io/arch"],
                "machineID": stable_hash(name, 16),
                "systemUUID": stable_hash(name + "/uuid", 16),
                "bootID": stable_hash(name + "/b", 16),
            },
        },
    }


def resource_slice(sim: SimCluster, node: str) -> Obj:
    """The DRA ResourceSlice of the node's cards, as the GPU driver publishes it."""
    eng = sim.engine
    spec = eng.placer.nodes[node]
    devices = []
    for uuid in eng.placer.node_cards[node]:
        card = eng.placer.card_spec[uuid]
        memory = spec.memory_bytes if spec.unified_memory else card.memory_bytes
        devices.append(
            {
                "name": f"gpu-{eng.placer.card_index[uuid]}",
                "attributes": {
                    "uuid": {"string": uuid},
                    "index": {"int": eng.placer.card_index[uuid]},
                    "productName": {"string": card.model},
                    "type": {"string": "gpu"},
                },
                "capacity": {"memory": {"value": f"{memory // GIB}Gi"}},
            }
        )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "devices": devices,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        },
    }


def device_plugin_daemonset(nodes: int) -> Obj:
    """NVIDIA's device plugin DaemonSet, scheduled on each of `nodes` nodes."""
    n = nodes
    labels = {"name": "nvidia-device-plugin-ds"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": SYSTEM},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                        }
                    ]
                },
            },
        },
        "status": {
            "currentNumberScheduled": n,
            "desiredNumberScheduled": n,
            "numberReady": n,
            "numberMisscheduled": 0,
            "numberAvailable": n,
        },
    }


def device_plugin_pod(node: str) -> tuple[str, Obj]:
    """The device plugin's pod on `node`: (its name, the object)."""
    name = f"nvidia-device-plugin-{stable_hash(node, 5)}"
    ds_uid = "ds-" + stable_hash("daemonset", 12)
    return name, {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": SYSTEM,
            "labels": {"name": "nvidia-device-plugin-ds"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "nvidia-device-plugin-daemonset",
                    "uid": ds_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "nvidia-device-plugin-ctr",
                    "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                }
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {
                    "name": "nvidia-device-plugin-ctr",
                    "ready": True,
                    "restartCount": 0,
                    "image": "",
                    "imageID": "",
                }
            ],
        },
    }
