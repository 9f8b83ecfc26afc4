"""Snapshots: the frozen `ClusterState` built from the simulator's plain state, cheaply.

Building 8,000 `Gpu` and 24,000 `Metric` objects per observation would cost ~40 ms; a tick
changes a few of them (the nodes scraped in it, the workloads whose replicas moved). So the
builder keeps the previous snapshot's frozen objects and rebuilds only what the engine marked
dirty, interning identical `Metric` objects on the way; everything else is shared between
successive snapshots (they are immutable, so sharing is safe).

Freshness: a reading is fresh until 2.5 scrape intervals old, then stale (its last value kept),
and missing after five minutes (Prometheus' lookback): a lost node's readings are never invented.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tools.model import (
    ActiveMode,
    ClusterState,
    Gpu,
    Link,
    LinkPath,
    Metric,
    Node,
    ReplicaPlacement,
    SchedulerView,
    Taint,
    Workload,
)

if TYPE_CHECKING:
    from tools.sim.engine import Engine

MISSING_AFTER_S = 300.0
UNREACHABLE = Taint(key="node.kubernetes.io/unreachable", effect="NoExecute")
UNSCHEDULABLE = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
HOST_MEMORY = "host-meminfo (NVML memory NotSupported on unified memory)"


class SnapshotBuilder:
    """Builds `ClusterState`s from an engine, sharing what did not change."""

    def __init__(self, engine: Engine, start: datetime) -> None:
        self.engine = engine
        self.start = start
        self.stale_after_s = 2.5 * engine.profile.scrape_interval_s
        self._gpus: dict[str, tuple[Gpu, ...]] = {}
        self._nodes: dict[str, Node] = {}
        self._workloads: dict[str, Workload] = {}
        self._links: tuple[Link, ...] = ()
        self._metrics: dict[tuple[float | None, float, str, str], Metric] = {}
        self._times: dict[float, datetime] = {}
        self._state: ClusterState | None = None
        self._version = -1

    def at(self, t: float) -> datetime:
        dt = self._times.get(t)
        if dt is None:
            if len(self._times) > 4096:
                self._times.clear()
            dt = self._times[t] = self.start + timedelta(seconds=t)
        return dt

    def metric(self, value: float | None, t: float | None, source: str) -> Metric:
        """A reading taken at `t`, aged against now; identical readings share one object."""
        if value is None or t is None:
            return Metric.missing(source)
        age = self.engine.state.t - t
        status = "fresh" if age <= self.stale_after_s else "stale"
        if age > MISSING_AFTER_S:
            return Metric.missing(source)
        key = (value, t, status, source)
        m = self._metrics.get(key)
        if m is None:
            if len(self._metrics) > 65536:
                self._metrics.clear()
            m = self._metrics[key] = Metric(
                value=value, status=status, observed_at=self.at(t), source=source
            )
        return m

    def build(self) -> ClusterState:
        eng = self.engine
        if self._state is not None and self._version == eng.version:
            return self._state
        for name in eng.dirty_nodes:
            self._nodes[name] = self._node(name)
        eng.dirty_nodes.clear()
        for name in eng.dirty_workloads:
            self._workloads[name] = self._workload(name)
        eng.dirty_workloads.clear()
        if eng.dirty_links:
            self._links = self._build_links()
            eng.dirty_links = False
        prof = eng.profile
        self._state = ClusterState(
            observed_at=self.at(eng.state.t),
            source="sim",
            nodes=tuple(self._nodes[n.name] for n in prof.nodes),
            workloads=tuple(self._workloads[w.name] for w in prof.workloads),
            pools=prof.pools,
            modes=prof.modes,
            active_mode=self._active_mode(),
            links=self._links,
        )
        self._version = eng.version
        return self._state

    def _node(self, name: str) -> Node:
        eng = self.engine
        spec = eng.placer.nodes[name]
        run = eng.state.nodes[name]
        gpus = []
        for uuid in eng.placer.node_cards[name]:
            card = eng.placer.card_spec[uuid]
            s = run.cards.get(uuid)
            t = s.t if s else None
            unified = spec.unified_memory
            total_src = HOST_MEMORY if unified else "dcgm"
            total = spec.memory_bytes if unified else card.memory_bytes
            gpus.append(
                Gpu(
                    uuid=uuid,
                    index=eng.placer.card_index[uuid],
                    model=card.model,
                    node=name,
                    memory_total_bytes=self.metric(float(total) if s else None, t, total_src),
                    memory_used_bytes=self.metric(
                        float(s.memory_used) if s else None, t, total_src
                    ),
                    utilization=self.metric(s.utilization if s else None, t, "dcgm"),
                    power_w=self.metric(s.power_w if s else None, t, "dcgm"),
                    sharing=card.sharing,
                    clients=tuple(eng.placer.clients[uuid]),
                )
            )
        allocatable, allocated = eng.placer.scheduler_counts(name, eng.state.t)
        taints: tuple[Taint, ...] = (UNREACHABLE,) if run.lost else ()
        if run.cordoned:
            taints += (UNSCHEDULABLE,)
        mem = run.memory_sample
        return Node(
            name=name,
            labels=spec.labels,
            taints=taints,
            cordoned=run.cordoned,
            ready=not run.lost,
            memory_total_bytes=spec.memory_bytes,
            memory_used_bytes=self.metric(
                float(mem[1]) if mem else None, mem[0] if mem else None, "node-exporter"
            ),
            unified_memory=spec.unified_memory,
            gpus=tuple(gpus),
            scheduler=SchedulerView(gpu_allocatable=allocatable, gpu_allocated=allocated),
        )

    def _workload(self, name: str) -> Workload:
        eng = self.engine
        spec = eng.specs[name]
        run = eng.state.workloads[name]
        s = run.sample
        t = s[0] if s else None

        def m(i: int) -> Metric:
            return self.metric(s[i] if s else None, t, "gateway")

        placement = tuple(
            ReplicaPlacement(
                index=r.index, nodes=tuple(r.nodes), gpus=tuple(r.cards), ready=r.phase == "ready"
            )
            for r in run.replicas
        )
        return Workload(
            name=name,
            kind=spec.kind,
            pool=spec.pool,
            desired_replicas=run.desired,
            ready_replicas=sum(1 for r in run.replicas if r.phase == "ready"),
            cards_per_replica=spec.cards_per_replica,
            nodes_per_replica=spec.nodes_per_replica,
            model=spec.model,
            context_length=spec.context_length,
            queue_depth=m(1),
            queue_wait_s=m(2),
            tokens_per_s=m(3),
            ttft_s=m(4),
            placement=placement,
            annotations=spec.annotations,
        )

    def _build_links(self) -> tuple[Link, ...]:
        eng = self.engine
        links = []
        for spec in eng.profile.links:
            paths = []
            for p in spec.paths:
                s = eng.state.link_samples.get(f"{spec.name}/{p.name}")
                t = s[0] if s else None
                paths.append(
                    LinkPath(
                        name=p.name,
                        nominal_gbps=p.nominal_gbps,
                        negotiated_gbps=self.metric(s[1] if s else None, t, "rdma-exporter"),
                        gid_index=self.metric(float(s[2]) if s else None, t, "rdma-exporter"),
                    )
                )
            links.append(
                Link(
                    name=spec.name,
                    nodes=spec.nodes,
                    paths=tuple(paths),
                    configured_gid_index=spec.gid_index,
                )
            )
        return tuple(links)

    def _active_mode(self) -> ActiveMode | None:
        """The mode whose every workload serves (the GX10 pair's memory allows only one)."""
        runs = self.engine.state.workloads
        for mode in self.engine.profile.modes:
            since: list[float] = []
            for w in mode.workloads:
                ready = [r.since_s for r in runs[w].replicas if r.phase == "ready"]
                if not ready:
                    break
                since.append(min(ready))
            else:
                if since:
                    return ActiveMode(name=mode.name, since=self.at(max(since)))
        return None
