"""The ClusterState of a Kubernetes cluster, built from the watch caches.

Equivalent to what the simulator reports for the same world: the same node, workload, pool and
mode names, each node's cards (DRA ResourceSlices where published, else the GPU feature
discovery labels), their sharing (device plugin labels, MIG resources), the scheduler's view
(allocatable `nvidia.com/gpu` against the sum of the requests of the pods bound there, so a
card counted twice shows), and each replica's placement from its pods. Measured values (card
utilisation, queue depth, ...) are not the API's to give: they are left missing, source
"kubernetes", for the metric sources to fill.

Cheap per tick: a node is rebuilt only when its object, its ResourceSlice or a pod on it
changed, a workload only when its object or one of its pods did.
"""

from __future__ import annotations

import json
from datetime import datetime

from tools.backends.kubernetes import contract as c
from tools.backends.kubernetes import objects as o
from tools.backends.kubernetes.cards import MISSING, SOURCE, Cards
from tools.backends.kubernetes.topology import links_from_labels, modes_from_labels
from tools.errors import InvalidInput
from tools.model import (
    ActiveMode,
    ClusterState,
    Link,
    LinkPath,
    Mode,
    Node,
    Pool,
    SchedulerView,
    Taint,
    Workload,
)

Obj = o.Obj


class Builder:
    """Keeps the cluster's objects indexed as changes come in, and turns them into
    ClusterStates, rebuilding only the nodes and workloads a change touched."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._topology: tuple[str, tuple[Pool, ...], tuple[Mode, ...], Obj] | None = None
        self.nodes: dict[str, Obj] = {}
        self.slices: dict[str, Obj] = {}
        """ResourceSlices of the GPU driver, by node name."""
        self._slice_node: dict[str, str] = {}
        self.workloads: dict[str, tuple[str, Obj]] = {}
        """By name: (kind, object)."""
        self._workload_key: dict[str, str] = {}
        self.pods: dict[str, Obj] = {}
        self._pod_at: dict[str, tuple[str | None, str | None]] = {}
        """Pod key -> (node, workload) it is indexed under."""
        self.by_node: dict[str, dict[str, Obj]] = {}
        self.by_workload: dict[str, dict[str, Obj]] = {}
        self.topology_obj: Obj | None = None
        self._dirty_nodes: set[str] = set()
        self._dirty_workloads: set[str] = set()
        self._built_nodes: dict[str, Node] = {}
        self._built_workloads: dict[str, Workload] = {}
        self._node_order: list[str] | None = None
        self._state: ClusterState | None = None
        self._node_memo: dict[str, tuple[object, Node]] = {}
        self._cards = Cards()

    # -- changes in -------------------------------------------------------------------------

    def feed_nodes(self, full: dict[str, Obj] | None, delta: dict[str, Obj | None]) -> None:
        if full is not None:
            self._dirty_nodes |= set(self.nodes) | set(full)
            self.nodes = {obj["metadata"]["name"]: obj for obj in full.values()}
            self._node_order = None
            return
        for key, obj in delta.items():
            if obj is None:
                self.nodes.pop(key, None)
                self._built_nodes.pop(key, None)
            else:
                self.nodes[key] = obj
            if obj is None or key not in self._built_nodes:
                self._node_order = None
            self._dirty_nodes.add(key)

    def feed_slices(self, full: dict[str, Obj] | None, delta: dict[str, Obj | None]) -> None:
        items = full.items() if full is not None else delta.items()
        if full is not None:
            self._dirty_nodes |= set(self.slices)
            self.slices, self._slice_node = {}, {}
        for key, obj in items:
            old = self._slice_node.pop(key, None)
            if old is not None:
                self.slices.pop(old, None)
                self._dirty_nodes.add(old)
            spec = (obj or {}).get("spec") or {}
            node = spec.get("nodeName")
            if obj is not None and node and spec.get("driver") == c.DRA_DRIVER:
                self.slices[node] = obj
                self._slice_node[key] = node
                self._dirty_nodes.add(node)

    def feed_workloads(
        self, kind: str, full: dict[str, Obj] | None, delta: dict[str, Obj | None]
    ) -> None:
        if full is not None:
            for name in [n for n, (k, _) in self.workloads.items() if k == kind]:
                self._drop_workload(name)
            delta = dict(full)
        for key, obj in delta.items():
            name = key.rsplit("/", 1)[-1]
            if obj is None:
                if self._workload_key.get(name) == key:
                    self._drop_workload(name)
                continue
            self.workloads[name] = (kind, obj)
            self._workload_key[name] = key
            self._dirty_workloads.add(name)

    def _drop_workload(self, name: str) -> None:
        self.workloads.pop(name, None)
        self._workload_key.pop(name, None)
        self._built_workloads.pop(name, None)
        self._dirty_workloads.add(name)

    def feed_pods(self, full: dict[str, Obj] | None, delta: dict[str, Obj | None]) -> None:
        if full is not None:
            for key in list(self.pods):
                self._unindex(key)
            delta = dict(full)
        for key, obj in delta.items():
            self._unindex(key)
            if obj is None:
                continue
            node = (obj.get("spec") or {}).get("nodeName")
            owner = o.owner_workload(obj)
            self.pods[key] = obj
            self._pod_at[key] = (node, owner)
            if node:
                self.by_node.setdefault(node, {})[key] = obj
                self._dirty_nodes.add(node)
            if owner:
                self.by_workload.setdefault(owner, {})[key] = obj
                self._dirty_workloads.add(owner)

    def _unindex(self, key: str) -> None:
        self.pods.pop(key, None)
        node, owner = self._pod_at.pop(key, (None, None))
        if node:
            self.by_node.get(node, {}).pop(key, None)
            self._dirty_nodes.add(node)
        if owner:
            self.by_workload.get(owner, {}).pop(key, None)
            self._dirty_workloads.add(owner)

    def feed_topology(self, full: dict[str, Obj] | None, delta: dict[str, Obj | None]) -> None:
        if full is not None:
            self.topology_obj = next(iter(full.values()), None)
        for obj in delta.values():
            self.topology_obj = obj
        if full is not None or delta:
            self._state = None

    # -- topology ---------------------------------------------------------------------------

    def topology(self) -> tuple[tuple[Pool, ...], tuple[Mode, ...], list[Obj]]:
        cm = self.topology_obj
        rv = (cm or {}).get("metadata", {}).get("resourceVersion", "")
        if self._topology is not None and self._topology[0] == rv:
            return self._topology[1], self._topology[2], self._topology[3]["links"]
        data = (cm or {}).get("data") or {}
        name = (cm or {}).get("metadata", {}).get("name", "steward-topology")
        try:
            pools = tuple(Pool.model_validate(p) for p in json.loads(data.get("pools", "[]")))
            modes = tuple(Mode.model_validate(m) for m in json.loads(data.get("modes", "[]")))
            links = list(json.loads(data.get("links", "[]")))
        except (ValueError, TypeError) as exc:
            raise InvalidInput(
                f"ConfigMap {self.namespace}/{name}: pools, modes and links must be JSON lists "
                f"of the documented shapes (docs/kubernetes.md): {exc}"
            ) from None
        self._topology = (rv, pools, modes, {"links": links})
        return pools, modes, links

    # -- the whole state --------------------------------------------------------------------

    def build(self, now: datetime) -> ClusterState:
        """The state now: the previous one, observed now, when nothing changed since."""
        if self._state is not None and not self._dirty_nodes and not self._dirty_workloads:
            return self._state.model_copy(update={"observed_at": now})
        pools, modes, links = self.topology()
        if not links:  # the ConfigMap names none: the node labels' pairs
            links = links_from_labels(self.nodes.values())
        if not modes:
            modes = modes_from_labels((obj for _, obj in self.workloads.values()), links)
        for name in self._dirty_nodes:
            obj = self.nodes.get(name)
            if obj is None:
                self._built_nodes.pop(name, None)
                continue
            pods = list(self.by_node.get(name, {}).values())
            self._built_nodes[name] = self._node(obj, pods, slice_=self.slices.get(name), now=now)
        self._dirty_nodes.clear()
        for name in list(self._dirty_workloads):
            found = self.workloads.get(name)
            if found is None:
                self._built_workloads.pop(name, None)
            else:
                mine = list(self.by_workload.get(name, {}).values())
                self._built_workloads[name] = self._workload(found[0], found[1], mine)
            self._dirty_workloads.discard(name)  # kept if _workload raised: asked again
        if self._node_order is None:
            self._node_order = sorted(self._built_nodes)
        wl = list(self._built_workloads.values())
        order = {w: i for i, w in enumerate(n for p in pools for n in p.workloads)}
        wl.sort(key=lambda w: (order.get(w.name, len(order)), w.name))
        known = {p.name for p in pools}
        extra = sorted({w.pool for w in wl} - known)
        pools = pools + tuple(
            Pool(name=p, workloads=tuple(w.name for w in wl if w.pool == p)) for p in extra
        )
        self._state = ClusterState(
            observed_at=now,
            source=SOURCE,
            nodes=tuple(self._built_nodes[n] for n in self._node_order),
            workloads=tuple(wl),
            pools=pools,
            modes=modes,
            active_mode=self._active_mode(modes, wl),
            links=tuple(self._link(lk) for lk in links),
        )
        return self._state

    # -- nodes ------------------------------------------------------------------------------

    def _node(self, obj: Obj, pods: list[Obj], *, slice_: Obj | None, now: datetime) -> Node:
        """The node; the very object built last time when nothing it reads changed (a kubelet's
        heartbeat changes the API object, not the Node), so readers' per-object caches hold."""
        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        name = meta["name"]
        ready_now = any(
            x.get("type") == "Ready" and x.get("status") == "True"
            for x in status.get("conditions") or []
        )
        key = (
            tuple((meta.get("labels") or {}).items()),
            spec.get("unschedulable"),
            (meta.get("annotations") or {}).get(c.CORDONED_BY),
            tuple(
                (t.get("key"), t.get("value"), t.get("effect")) for t in spec.get("taints") or []
            ),
            ready_now,
            tuple((status.get("allocatable") or {}).items()),
            (status.get("capacity") or {}).get("memory"),
            (slice_ or {}).get("metadata", {}).get("resourceVersion"),
            tuple(sorted(p["metadata"].get("resourceVersion", "") for p in pods)),
        )
        cached = self._node_memo.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        labels = dict(meta.get("labels") or {})
        taints = tuple(
            Taint(key=t["key"], value=t.get("value") or "", effect=t.get("effect", "NoSchedule"))
            for t in spec.get("taints") or []
        )
        ready = any(
            x.get("type") == "Ready" and x.get("status") == "True"
            for x in status.get("conditions") or []
        )
        alloc = status.get("allocatable") or {}
        live = [p for p in pods if not o.terminated(p)]
        clients: dict[str, list[str]] = {}
        for p in sorted(live, key=o.replica_key):
            client = o.client_of(p)
            for uuid in ((p["metadata"].get("annotations") or {}).get(c.GPUS) or "").split(","):
                if uuid and client:
                    clients.setdefault(uuid, []).append(client)
        unified = labels.get(c.UNIFIED) == "true"
        memory = o.quantity((status.get("capacity") or {}).get("memory", 0))
        gpus = self._cards.of(
            name,
            labels,
            alloc,
            slice_=slice_,
            clients=clients,
            now=now,
            unified=unified,
            node_memory=memory,
        )
        scheduler = None
        if c.GPU in alloc or gpus:
            scheduler = SchedulerView(
                gpu_allocatable=o.quantity(alloc.get(c.GPU, 0)),
                gpu_allocated=sum(o.pod_gpus(p) for p in live),
            )
        node = Node(
            name=name,
            labels=labels,
            taints=taints,
            cordoned=bool(spec.get("unschedulable")),
            cordoned_by_steward=bool(spec.get("unschedulable"))
            and (meta.get("annotations") or {}).get(c.CORDONED_BY) == c.STEWARD,
            ready=ready,
            memory_total_bytes=memory,
            unified_memory=unified,
            gpus=gpus,
            scheduler=scheduler,
        )
        self._node_memo[name] = (key, node)
        return node

    # -- workloads --------------------------------------------------------------------------

    def _workload(self, kind: str, obj: Obj, mine: list[Obj]) -> Workload:
        meta = obj["metadata"]
        name = meta["name"]
        labels = meta.get("labels") or {}
        where = f"{kind} {meta.get('namespace', self.namespace)}/{name}"
        pool = labels.get(c.POOL)
        if not pool:
            raise InvalidInput(
                f"{where}: labelled {c.MANAGED}=true but has no {c.POOL} label; add it "
                "(docs/kubernetes.md: the label contract) or remove the managed label"
            )
        wkind = labels.get(c.KIND, "inference")
        if wkind not in c.KINDS:
            raise InvalidInput(f"{where}: {c.KIND}={wkind!r}: choose one of {', '.join(c.KINDS)}")
        notes = meta.get("annotations") or {}
        template, size = o.template_of(kind, obj)
        per_pod = o.pod_gpus(template)
        context = notes.get(c.CONTEXT)
        if context is not None and not context.isdigit():
            raise InvalidInput(f"{where}: {c.CONTEXT}={context!r} must be a whole number")
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        w = Workload(
            name=name,
            kind=wkind,
            pool=pool,
            desired_replicas=int(spec.get("replicas") or 0),
            ready_replicas=int(status.get("readyReplicas") or 0),
            cards_per_replica=per_pod * size,
            nodes_per_replica=size,
            model=notes.get(c.MODEL),
            context_length=int(context) if context else None,
            queue_depth=MISSING,
            queue_wait_s=MISSING,
            tokens_per_s=MISSING,
            ttft_s=MISSING,
            placement=o.placements(mine),
            annotations={
                k: v
                for k, v in notes.items()
                if k not in c.OWN_ANNOTATIONS and k.startswith("steward.dev/")
            },
        )
        return w

    def _active_mode(self, modes: tuple[Mode, ...], workloads: list[Workload]) -> ActiveMode | None:
        by_name = {w.name: w for w in workloads}
        for mode in modes:
            since: list[datetime] = []
            for wname in mode.workloads:
                w = by_name.get(wname)
                times = [
                    t
                    for p in self.by_workload.get(wname, {}).values()
                    if o.is_ready(p)
                    and "deletionTimestamp" not in p["metadata"]
                    and (t := o.ready_since(p)) is not None
                ]
                if w is None or not times:
                    break
                since.append(min(times))
            else:
                if since:
                    return ActiveMode(name=mode.name, since=max(since))
        return None

    @staticmethod
    def _link(lk: Obj) -> Link:
        paths = tuple(
            LinkPath(
                name=p["name"],
                nominal_gbps=float(p["nominal_gbps"]),
                negotiated_gbps=MISSING,
                gid_index=MISSING,
            )
            for p in lk.get("paths") or []
        )
        nodes = tuple(lk.get("nodes") or ())
        return Link(
            name=lk["name"],
            nodes=(str(nodes[0]), str(nodes[1])),
            paths=paths,
            configured_gid_index=lk.get("configured_gid_index"),
        )
