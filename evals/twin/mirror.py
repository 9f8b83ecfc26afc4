"""The simulator seen through the Kubernetes API: its nodes, workloads and replicas as objects.

After every step of the simulator the mirror rebuilds the objects whose simulated counterpart
changed and writes them to the store, which gives each changed object a new resourceVersion
and a watch event; unchanged objects keep theirs, so a watcher sees only what changed.

The mapping (docs/kubernetes.md documents the contract the backend reads):
- a node: labels (its own, the GPU feature discovery labels, zone), `spec.unschedulable` and
  the unschedulable taint when cordoned, Ready=Unknown and the unreachable taint when lost,
  allocatable `nvidia.com/gpu` as the device plugin advertises it (MPS replicas, or the
  physical count when the plugin does not advertise them: the seeds' double count);
- its cards: a DRA ResourceSlice per node (driver gpu.nvidia.com, one device per card with its
  UUID, index, product and memory);
- a workload: a Deployment, a StatefulSet (render workers) or a LeaderWorkerSet (a replica
  over several nodes), labelled with its pool and kind, annotated with its model, context,
  serving endpoint and gateway state; its replicas are Pods (one per node of a replica), with
  GPU requests, nodeName, ownerReferences, phase and conditions; a replica that cannot be
  placed is a Pending pod with a FailedScheduling event;
- pools, modes and links: the `steward-topology` ConfigMap.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from evals.twin.resources import by_kind
from evals.twin.store import Obj, Store, rfc3339
from tools.sim.profiles import GIB, WorkloadSpec
from tools.sim.snapshot import CLOSED

if TYPE_CHECKING:
    from tools.backends.sim import SimCluster
    from tools.sim.state import Replica

GPU = "nvidia.com/gpu"
DRIVER = "gpu.nvidia.com"
KUBELET_VERSION = "v1.32.4"
TOPOLOGY = "steward-topology"

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
SYSTEM = "kube-system"


def workload_resource(spec: WorkloadSpec) -> Any:
    """Which kind stands for a workload: LWS over several nodes, StatefulSet for render."""
    if spec.nodes_per_replica > 1:
        return LWS
    if spec.kind == "render":
        return STATEFULSET
    return DEPLOYMENT


def _hash(text: str, n: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha1(text.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:n])


def pod_names(spec: WorkloadSpec, index: int) -> list[str]:
    """The pods of one replica, as the workload's controller names them."""
    if spec.nodes_per_replica > 1:  # LeaderWorkerSet: leader NAME-I, workers NAME-I-K
        return [spec.name + f"-{index}"] + [
            f"{spec.name}-{index}-{k}" for k in range(1, spec.nodes_per_replica)
        ]
    if spec.kind == "render":
        return [f"{spec.name}-{index}"]
    return [f"{spec.name}-{_hash(spec.name, 10)}-{_hash(f'{spec.name}/{index}', 5)}"]


class Mirror:
    """Writes the simulator's world into the store (see the module docstring)."""

    def __init__(self, sim: SimCluster, store: Store, namespace: str, endpoint: str) -> None:
        self.sim = sim
        self.store = store
        self.namespace = namespace
        self.endpoint = endpoint.rstrip("/")
        """Base URL of the workloads' OpenAI-compatible endpoints (the twin's own)."""
        self.pods: dict[str, tuple[str, int]] = {}
        """Pod name -> (workload, replica index), for the writes that name a pod."""
        self._node_keys: dict[str, object] = {}
        self._workload_keys: dict[str, object] = {}
        self._reasons: dict[tuple[str, int], str] = {}
        self._workload_pods: dict[str, set[str]] = {}
        self._seeded = False

    # -- the whole world ------------------------------------------------------------------------

    def sync(self) -> None:
        eng = self.sim.engine
        if not self._seeded:
            self._seed()
        t = eng.state.t
        for spec in eng.profile.nodes:
            name = spec.name
            node_run = eng.state.nodes[name]
            counts = eng.placer.scheduler_counts(name, t)
            key = (node_run.cordoned, node_run.lost, counts)
            if self._node_keys.get(name) != key:
                self._node_keys[name] = key
                self.store.upsert(NODE, "", name, self._node(name, counts))
        for wspec in eng.profile.workloads:
            run = eng.state.workloads[wspec.name]
            reps = tuple(
                (r.index, r.phase, tuple(r.nodes), tuple(r.cards), r.since_s) for r in run.replicas
            )
            wkey = (run.desired, run.accepting, reps)
            if self._workload_keys.get(wspec.name) != wkey:
                self._workload_keys[wspec.name] = wkey
                self._workload(wspec)
        self._update_pdbs()

    def heartbeat(self, names: list[str]) -> None:
        """The kubelets of these nodes post their status (a new lastHeartbeatTime), as real
        ones do every few minutes: a watch event per node, nothing else changed."""
        now = rfc3339(self.sim.now)
        for name in names:
            old = self.store.find(NODE, "", name)
            if old is None:
                continue
            status = dict(old["status"])
            status["conditions"] = [
                {**c, "lastHeartbeatTime": now} if c["type"] == "Ready" else c
                for c in status["conditions"]
            ]
            self.store.upsert(NODE, "", name, {**old, "status": status})

    def _seed(self) -> None:
        """What exists once and does not move: namespaces, the topology, cards, Services."""
        self._seeded = True
        s = self.store
        for ns in ("default", SYSTEM, "kube-node-lease", self.namespace):
            s.upsert(
                NAMESPACE,
                "",
                ns,
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": ns},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                },
            )
        s.upsert(CONFIGMAP, self.namespace, TOPOLOGY, self._topology())
        eng = self.sim.engine
        for node in eng.profile.nodes:
            if node.cards:
                s.upsert(SLICE, "", f"{node.name}-{DRIVER}", self._slice(node.name))
            self._daemon_pod(node.name)
            s.upsert(
                LEASE,
                "kube-node-lease",
                node.name,
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": node.name, "namespace": "kube-node-lease"},
                    "spec": {
                        "holderIdentity": node.name,
                        "leaseDurationSeconds": 40,
                        "renewTime": rfc3339(self.sim.now).replace("Z", ".000000Z"),
                    },
                },
            )
        s.upsert(DAEMONSET, SYSTEM, "nvidia-device-plugin-daemonset", self._daemonset())
        for spec in eng.profile.workloads:
            s.upsert(SERVICE, self.namespace, spec.name, self._service(spec))

    def _topology(self) -> Obj:
        prof = self.sim.engine.profile
        pools = [p.model_dump(mode="json") for p in prof.pools]
        modes = [m.model_dump(mode="json") for m in prof.modes]
        links = [
            {
                "name": lk.name,
                "nodes": list(lk.nodes),
                "paths": [{"name": p.name, "nominal_gbps": p.nominal_gbps} for p in lk.paths],
                "configured_gid_index": lk.gid_index,
            }
            for lk in prof.links
        ]
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": TOPOLOGY,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/part-of": "steward"},
            },
            "data": {
                "pools": json.dumps(pools),
                "modes": json.dumps(modes),
                "links": json.dumps(links),
            },
        }

    # -- nodes ----------------------------------------------------------------------------------

    def _node(self, name: str, counts: tuple[int, int]) -> Obj:
        eng = self.sim.engine
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
        now = rfc3339(self.sim.now)
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
        existing = self.store.find(NODE, "", name)
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
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": node_spec,
            "status": {
                "capacity": dict(resources),
                "allocatable": resources,
                "conditions": [ready],
                "addresses": [
                    {"type": "Hostname", "address": name},
                    {"type": "InternalIP", "address": _ip(name)},
                ],
                "nodeInfo": {
                    "kubeletVersion": KUBELET_VERSION,
                    "kubeProxyVersion": KUBELET_VERSION,
                    "containerRuntimeVersion": "containerd://1.7.24",
                    "osImage": "Ubuntu 24.04",
                    "kernelVersion": "6.8.0",
                    "operatingSystem": "linux",
                    "architecture": labels["kubernetes.io/arch"],
                    "machineID": _hash(name, 16),
                    "systemUUID": _hash(name + "/uuid", 16),
                    "bootID": _hash(name + "/b", 16),
                },
            },
        }

    def _slice(self, node: str) -> Obj:
        eng = self.sim.engine
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

    def _daemonset(self) -> Obj:
        n = len(self.sim.engine.profile.nodes)
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

    def _daemon_pod(self, node: str) -> None:
        name = f"nvidia-device-plugin-{_hash(node, 5)}"
        ds_uid = "ds-" + _hash("daemonset", 12)
        self.store.upsert(
            POD,
            SYSTEM,
            name,
            {
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
            },
        )

    # -- workloads --------------------------------------------------------------------------------

    def _service(self, spec: WorkloadSpec) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": spec.name,
                "namespace": self.namespace,
                "labels": {"steward.dev/workload": spec.name},
            },
            "spec": {
                "selector": {"steward.dev/workload": spec.name},
                "ports": [{"name": "http", "port": 8000, "targetPort": 8000, "protocol": "TCP"}],
                "type": "ClusterIP",
                "clusterIP": _ip("svc/" + spec.name),
            },
        }

    def template(self, spec: WorkloadSpec) -> Obj:
        pool_sel = next(p.node_selector for p in self.sim.profile.pools if p.name == spec.pool)
        per_pod = -(-spec.cards_per_replica // spec.nodes_per_replica)
        resources = {"requests": {GPU: str(per_pod)}, "limits": {GPU: str(per_pod)}}
        return {
            "metadata": {"labels": {"steward.dev/workload": spec.name}},
            "spec": {
                "nodeSelector": {**pool_sel, **spec.node_selector},
                "containers": [
                    {
                        "name": "server",
                        "image": "vllm/vllm-openai:v0.11.0" if spec.serving else "steward/worker",
                        "args": ["--model", spec.model] if spec.model else [],
                        "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
                        "resources": resources,
                    }
                ],
                "terminationGracePeriodSeconds": 120,
            },
        }

    def _workload(self, spec: WorkloadSpec) -> None:
        eng = self.sim.engine
        run = eng.state.workloads[spec.name]
        res = workload_resource(spec)
        modes = [m.name for m in eng.profile.modes if spec.name in m.workloads]
        labels = {
            "steward.dev/managed": "true",
            "steward.dev/pool": spec.pool,
            "steward.dev/kind": spec.kind,
            "app.kubernetes.io/name": spec.name,
        }
        if modes:
            labels["steward.dev/mode"] = modes[0]
        annotations = {**spec.annotations, "steward.dev/endpoint": f"{self.endpoint}/{spec.name}"}
        if spec.model:
            annotations["steward.dev/model"] = spec.model
        if spec.context_length:
            annotations["steward.dev/context-length"] = str(spec.context_length)
        if not run.accepting:
            annotations[CLOSED] = "false"
        live = [r for r in run.replicas if r.phase != "terminating"]
        ready = sum(1 for r in run.replicas if r.phase == "ready")
        template = self.template(spec)
        wspec: Obj = {
            "replicas": run.desired,
            "selector": {"matchLabels": {"steward.dev/workload": spec.name}},
        }
        if res is LWS:
            wspec = {
                "replicas": run.desired,
                "leaderWorkerTemplate": {
                    "size": spec.nodes_per_replica,
                    "workerTemplate": template,
                },
            }
        else:
            wspec["template"] = template
            if res is STATEFULSET:
                wspec["serviceName"] = spec.name
        old = self.store.find(res, self.namespace, spec.name)
        generation = int(old["metadata"].get("generation", 1)) if old else 1
        if old is not None and old.get("spec") != wspec:
            generation += 1
        status: Obj = {
            "replicas": len(live),
            "readyReplicas": ready,
            "updatedReplicas": len(live),
            "observedGeneration": generation,
        }
        if res is DEPLOYMENT:
            status["availableReplicas"] = ready
            status["unavailableReplicas"] = max(0, run.desired - ready)
        else:
            status["currentReplicas"] = len(live)
        obj = {
            "apiVersion": res.api_version,
            "kind": res.kind,
            "metadata": {
                "name": spec.name,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": annotations,
                "generation": generation,
            },
            "spec": wspec,
            "status": status,
        }
        stored = self.store.upsert(res, self.namespace, spec.name, obj)
        owner = stored
        if res is DEPLOYMENT:
            owner = self._replicaset(spec, stored, template, len(live), ready)
        self._pods(spec, run.replicas, owner)

    def _replicaset(
        self, spec: WorkloadSpec, deploy: Obj, template: Obj, n: int, ready: int
    ) -> Obj:
        name = f"{spec.name}-{_hash(spec.name, 10)}"
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {"steward.dev/workload": spec.name},
                "ownerReferences": [_owner(deploy)],
            },
            "spec": {
                "replicas": deploy["spec"]["replicas"],
                "selector": deploy["spec"]["selector"],
                "template": template,
            },
            "status": {"replicas": n, "readyReplicas": ready, "availableReplicas": ready},
        }
        return self.store.upsert(REPLICASET, self.namespace, name, rs)

    def _pods(self, spec: WorkloadSpec, replicas: list[Replica], owner: Obj) -> None:
        wanted: set[str] = set()
        for r in replicas:
            names = pod_names(spec, r.index)
            for k, name in enumerate(names):
                wanted.add(name)
                self.pods[name] = (spec.name, r.index)
                node = r.nodes[k] if k < len(r.nodes) else None
                per_node = len(r.cards) // max(1, len(r.nodes)) if r.nodes else 0
                cards = r.cards[k * per_node : (k + 1) * per_node] if node else []
                pod = self._pod(spec, r, name, k=k, node=node, cards=cards, owner=owner)
                self.store.upsert(POD, self.namespace, name, pod)
                self._scheduling_event(spec, r, name, pod)
        for name in self._workload_pods.get(spec.name, set()) - wanted:
            self.store.remove(POD, self.namespace, name)
            self.pods.pop(name, None)
            self.store.remove(EVENT, self.namespace, f"{name}.failedscheduling")
        self._workload_pods[spec.name] = wanted

    def _pod(
        self,
        spec: WorkloadSpec,
        r: Replica,
        name: str,
        *,
        k: int,
        node: str | None,
        cards: list[str],
        owner: Obj,
    ) -> Obj:
        at = rfc3339(self.sim.clock.at(r.since_s))
        template = self.template(spec)
        labels = {**template["metadata"]["labels"], "steward.dev/replica": str(r.index)}
        if spec.nodes_per_replica > 1:
            labels["leaderworkerset.sigs.k8s.io/worker-index"] = str(k)
            labels["leaderworkerset.sigs.k8s.io/group-index"] = str(r.index)
            labels["leaderworkerset.sigs.k8s.io/name"] = spec.name
        elif spec.kind != "render":
            labels["pod-template-hash"] = _hash(spec.name, 10)
        meta: Obj = {
            "name": name,
            "namespace": self.namespace,
            "labels": labels,
            "ownerReferences": [_owner(owner)],
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
                    "message": self._reason(spec, r),
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
        ready_at = at
        cond = "True" if ready else "False"
        status.update(
            {
                "phase": "Running",
                "hostIP": _ip(node),
                "podIP": _ip(name),
                "startTime": at,
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": at},
                    {"type": "Initialized", "status": "True", "lastTransitionTime": at},
                    {"type": "ContainersReady", "status": cond, "lastTransitionTime": ready_at},
                    {"type": "Ready", "status": cond, "lastTransitionTime": ready_at},
                ],
                "containerStatuses": [
                    {
                        "name": "server",
                        "ready": ready,
                        "restartCount": 0,
                        "started": True,
                        "image": template["spec"]["containers"][0]["image"],
                        "imageID": "",
                        "containerID": f"containerd://{_hash(name, 32)}",
                        "state": {"running": {"startedAt": at}},
                    }
                ],
            }
        )
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": pspec,
            "status": status,
        }

    def _reason(self, spec: WorkloadSpec, r: Replica) -> str:
        key = (spec.name, r.index)
        found = self._reasons.get(key)
        if found is None:
            eng = self.sim.engine
            why = eng.placer.find(spec, eng.state.t)
            n = len(eng.profile.nodes)
            detail = why if isinstance(why, str) else "waiting for the scheduler"
            found = self._reasons[key] = f"0/{n} nodes are available: Insufficient {GPU}. {detail}"
            if len(self._reasons) > 10_000:
                self._reasons.clear()
        return found

    def _scheduling_event(self, spec: WorkloadSpec, r: Replica, pod_name: str, pod: Obj) -> None:
        if pod["status"]["phase"] != "Pending" or r.nodes:
            return
        name = f"{pod_name}.failedscheduling"
        if self.store.find(EVENT, self.namespace, name) is not None:
            return
        at = rfc3339(self.sim.now)
        self.store.upsert(
            EVENT,
            self.namespace,
            name,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": self.namespace},
                "involvedObject": {
                    "kind": "Pod",
                    "namespace": self.namespace,
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
            },
        )

    # -- disruption budgets -----------------------------------------------------------------------

    def _update_pdbs(self) -> None:
        from evals.twin.selectors import label_matcher

        for (ns, name), pdb in list(self.store.table(PDB).items()):
            sel = pdb.get("spec", {}).get("selector", {}).get("matchLabels", {})
            match = label_matcher(",".join(f"{k}={v}" for k, v in sel.items()))
            pods = [p for (pns, _), p in self.store.table(POD).items() if pns == ns and match(p)]
            status = budget_status(pdb, pods, self._scale_of(ns, pods))
            if pdb.get("status") != status:
                self.store.upsert(PDB, ns, name, {**pdb, "status": status})

    def _scale_of(self, ns: str, pods: list[Obj]) -> int | None:
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
            owner = self.store.find(res, ns, ref["name"]) if ref and res else None
            if owner is None:
                return None
            if owner["kind"] == "ReplicaSet":
                up = next(
                    (
                        o
                        for o in owner["metadata"].get("ownerReferences", [])
                        if o.get("controller")
                    ),
                    None,
                )
                deploy = self.store.find(DEPLOYMENT, ns, up["name"]) if up else None
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


def _owner(obj: Obj) -> Obj:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _ip(name: str) -> str:
    d = hashlib.sha1(name.encode()).digest()
    return f"10.{d[0]}.{d[1]}.{max(1, d[2] % 255)}"
