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

import json
from typing import TYPE_CHECKING, Any

from lab.sim.profiles import WorkloadSpec
from lab.sim.snapshot import CLOSED
from lab.twin.budgets import update_budgets
from lab.twin.identity import fake_ip, stable_hash
from lab.twin.nodes import (
    DRIVER,
    GPU,
    SYSTEM,
    device_plugin_daemonset,
    device_plugin_pod,
    node_object,
    resource_slice,
)
from lab.twin.pods import failed_scheduling, owner_reference, pod_names, pod_object
from lab.twin.resources import (
    CONFIGMAP,
    DAEMONSET,
    DEPLOYMENT,
    EVENT,
    LEASE,
    LWS,
    NAMESPACE,
    NODE,
    POD,
    REPLICASET,
    SERVICE,
    SLICE,
    STATEFULSET,
)
from lab.twin.store import Obj, Store, rfc3339

if TYPE_CHECKING:
    from lab.sim.backend import SimCluster
    from lab.sim.state import Replica

TOPOLOGY = "steward-topology"


def workload_resource(spec: WorkloadSpec) -> Any:
    """Which kind stands for a workload: LWS over several nodes, StatefulSet for render."""
    if spec.nodes_per_replica > 1:
        return LWS
    if spec.kind == "render":
        return STATEFULSET
    return DEPLOYMENT


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
            key = (node_run.cordoned, node_run.cordoned_by_steward, node_run.lost, counts)
            if self._node_keys.get(name) != key:
                self._node_keys[name] = key
                self.store.upsert(
                    NODE,
                    "",
                    name,
                    node_object(self.sim, name, counts, self.store.find(NODE, "", name)),
                )
        for wspec in eng.profile.workloads:
            run = eng.state.workloads[wspec.name]
            reps = tuple(
                (r.index, r.phase, tuple(r.nodes), tuple(r.cards), r.since_s) for r in run.replicas
            )
            wkey = (run.desired, run.accepting, reps)
            if self._workload_keys.get(wspec.name) != wkey:
                self._workload_keys[wspec.name] = wkey
                self._workload(wspec)
        update_budgets(self.store)

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
                s.upsert(SLICE, "", f"{node.name}-{DRIVER}", resource_slice(self.sim, node.name))
            s.upsert(POD, SYSTEM, *device_plugin_pod(node.name))
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
        s.upsert(
            DAEMONSET,
            SYSTEM,
            "nvidia-device-plugin-daemonset",
            device_plugin_daemonset(len(self.sim.engine.profile.nodes)),
        )
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
                "clusterIP": fake_ip("svc/" + spec.name),
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
        labels = {
            "steward.dev/managed": "true",
            "steward.dev/pool": spec.pool,
            "steward.dev/kind": spec.kind,
            "app.kubernetes.io/name": spec.name,
        }
        annotations = {**spec.annotations, "steward.dev/endpoint": f"{self.endpoint}/{spec.name}"}
        for mode in eng.profile.modes:  # its mode and share of the mode's figures, as labels say
            if spec.name in mode.workloads:
                labels["steward.dev/mode"] = mode.name
                share = mode.aggregate_peak_tok_s / len(mode.workloads)
                annotations["steward.dev/peak-tok-s"] = f"{share:g}"
                annotations["steward.dev/single-stream-tok-s"] = f"{mode.single_stream_tok_s:g}"
                break
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
        name = f"{spec.name}-{stable_hash(spec.name, 10)}"
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {"steward.dev/workload": spec.name},
                "ownerReferences": [owner_reference(deploy)],
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
                pod = pod_object(
                    spec,
                    r,
                    name,
                    k=k,
                    node=node,
                    cards=cards,
                    owner=owner,
                    namespace=self.namespace,
                    template=self.template(spec),
                    at=rfc3339(self.sim.clock.at(r.since_s)),
                    reason=self._reason(spec, r) if node is None else "",
                )
                self.store.upsert(POD, self.namespace, name, pod)
                if pod["status"]["phase"] == "Pending" and not r.nodes:
                    self._scheduling_event(name, pod)
        for name in self._workload_pods.get(spec.name, set()) - wanted:
            self.store.remove(POD, self.namespace, name)
            self.pods.pop(name, None)
            self.store.remove(EVENT, self.namespace, f"{name}.failedscheduling")
        self._workload_pods[spec.name] = wanted

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

    def _scheduling_event(self, pod_name: str, pod: Obj) -> None:
        """The scheduler's FailedScheduling event of a Pending pod, written once."""
        name = f"{pod_name}.failedscheduling"
        if self.store.find(EVENT, self.namespace, name) is None:
            event = failed_scheduling(self.namespace, pod_name, pod, rfc3339(self.sim.now))
            self.store.upsert(EVENT, self.namespace, name, event)
