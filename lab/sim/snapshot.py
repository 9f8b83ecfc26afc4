"""Snapshots: the frozen `ClusterState` built from the simulator's plain state.

A tick changes a few nodes (those scraped in it) and workloads (those whose replicas moved), so
the builder keeps the previous snapshot's frozen objects and rebuilds only what the engine
marked dirty, interning identical `Metric` objects on the way; everything else is shared
between successive snapshots (they are immutable, so sharing is safe).

Freshness: a reading is fresh until 2.5 scrape intervals old, then stale (its last value kept),
and missing after five minutes (Prometheus' lookback): a lost node's readings are never invented.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from tools.metric import MetricStatus, made
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
    ServingProfile,
    Taint,
    Workload,
)

if TYPE_CHECKING:
    from lab.sim.engine import Engine
    from lab.sim.profiles import WorkloadSpec
    from lab.sim.state import CardSample, Replica

MISSING_AFTER_S = 300.0
INTERNED_MIN = 4096
"""The shared readings are pruned by age once there are this many (or twice as many as the last
pruning left)."""
CLOSED = "steward.dev/accepting"
"""Annotation set (to "false") on a workload whose gateway is closed."""
UNREACHABLE = Taint(key="node.kubernetes.io/unreachable", effect="NoExecute")
UNSCHEDULABLE = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")
HOST_MEMORY = "host-meminfo (NVML memory NotSupported on unified memory)"


class SnapshotBuilder:
    """Builds `ClusterState`s from an engine, sharing what did not change."""

    def __init__(self, engine: Engine, start: datetime) -> None:
        self.engine = engine
        self.start = start
        prof = engine.profile
        self.stale_after_s = 2.5 * prof.scrape_interval_s
        self.node_stale_after_s = 2.5 * (prof.node_scrape_interval_s or prof.scrape_interval_s)
        self._gpus: dict[str, tuple[Gpu, ...]] = {}
        prof = engine.profile
        self._node_at = {n.name: i for i, n in enumerate(prof.nodes)}
        self._workload_at = {w.name: i for i, w in enumerate(prof.workloads)}
        self._nodes: list[Node | None] = [None] * len(prof.nodes)
        self._workloads: list[Workload | None] = [None] * len(prof.workloads)
        """The last snapshot's objects, in profile order; a dirty one is replaced in place."""
        self._links: tuple[Link, ...] = ()
        self._metrics: dict[tuple[float | None, float, str, str], Metric] = {}
        self._prune_at = INTERNED_MIN
        self._times: dict[float, datetime] = {}
        self._missing_by_source: dict[str, Metric] = {}
        self._gpu_cache: dict[str, tuple[CardSample | None, tuple[str, ...], str, Gpu]] = {}
        self._scheduler: dict[tuple[int, int], SchedulerView] = {}
        self._placements: dict[
            tuple[str, bool, tuple[str, ...], float | None], ReplicaPlacement
        ] = {}
        self._state: ClusterState | None = None
        self._version = -1
        self._profiles: dict[str, ServingProfile] = {}

    def at(self, t: float) -> datetime:
        dt = self._times.get(t)
        if dt is None:
            if len(self._times) > 4096:
                self._times.clear()
            dt = self._times[t] = self.start + timedelta(seconds=t)
        return dt

    def metric(
        self, value: float | None, t: float | None, source: str, stale_after_s: float | None = None
    ) -> Metric:
        """A reading taken at `t`, aged against now; identical readings share one object."""
        if value is None or t is None:
            return self._missing(source)
        age = self.engine.state.t - t
        if age > MISSING_AFTER_S:
            return self._missing(source)
        fresh = age <= (stale_after_s or self.stale_after_s)
        return self._interned(value, t, "fresh" if fresh else "stale", source)

    def _interned(self, value: float, t: float, status: MetricStatus, source: str) -> Metric:
        """The fresh or stale reading (`status` as `metric` works it out), one object each."""
        key = (value, t, status, source)
        m = self._metrics.get(key)
        if m is None:
            if len(self._metrics) >= self._prune_at:
                self._prune()
            m = self._metrics[key] = made(float(value), status, self.at(t), source)
        return m

    def _prune(self) -> None:
        """Forget the readings taken before the lookback: `metric` never asks for them again.

        Cleared only when full, the table grew to 65,536 readings on a 1,000-node fleet,
        two thirds of them dead, some 10 MB of the process; pruned by age it stays within
        twice the readings still alive."""
        oldest = self.engine.state.t - MISSING_AFTER_S
        for key in [k for k in self._metrics if k[1] < oldest]:
            del self._metrics[key]
        self._prune_at = max(INTERNED_MIN, 2 * len(self._metrics))

    def _missing(self, source: str) -> Metric:
        m = self._missing_by_source.get(source)
        if m is None:
            m = self._missing_by_source[source] = Metric.missing(source)
        return m

    def build(self) -> ClusterState:
        eng = self.engine
        if self._state is not None and self._version == eng.version:
            return self._state
        for name in eng.dirty_nodes:
            self._nodes[self._node_at[name]] = self._node(name)
        eng.dirty_nodes.clear()
        for name in eng.dirty_workloads:
            self._workloads[self._workload_at[name]] = self._workload(name)
        eng.dirty_workloads.clear()
        if eng.dirty_links:
            self._links = self._build_links()
            eng.dirty_links = False
        prof = eng.profile
        self._state = ClusterState(
            observed_at=self.at(eng.state.t),
            source="sim",
            nodes=tuple(self._nodes),  # all built: every node starts dirty
            workloads=tuple(self._workloads),
            pools=prof.pools,
            modes=prof.modes,
            active_mode=self._active_mode(),
            links=self._links,
        )
        self._version = eng.version
        return self._state

    def _node(self, name: str) -> Node:
        eng = self.engine
        placer = eng.placer
        spec = placer.nodes[name]
        run = eng.state.nodes[name]
        source = HOST_MEMORY if spec.unified_memory else "dcgm"
        gpu_cache = self._gpu_cache
        interned = self._interned
        metrics = self._metrics
        samples = run.cards
        clients_of = placer.clients
        status: MetricStatus | None = None  # a node's cards share one scrape time: one status
        status_t: float | None = None
        gpus = []
        for uuid in placer.node_cards[name]:
            s = samples.get(uuid)
            clients = tuple(clients_of[uuid])
            t = s.t if s else None
            if status is None or t != status_t:
                status, status_t = self._status(t), t
            cached = gpu_cache.get(uuid)
            if cached and cached[0] is s and cached[1] == clients and cached[2] == status:
                gpus.append(cached[3])  # nothing observable changed: share the frozen object
                continue
            card = placer.card_spec[uuid]
            if s is None:
                used = total_m = util = power = self._missing("dcgm")
            elif status == "missing":  # older than the lookback: the values are gone
                used = total_m = self._missing(source)
                util = power = self._missing("dcgm")
            else:
                # Idle cards of one scrape read alike: most readings are found, not made.
                t = s.t
                total = float(spec.memory_bytes if spec.unified_memory else card.memory_bytes)
                total_m = metrics.get((total, t, status, source)) or interned(
                    total, t, status, source
                )
                used_b = float(s.memory_used)
                used = metrics.get((used_b, t, status, source)) or interned(
                    used_b, t, status, source
                )
                # Percent, as DCGM and NVML report it (the policy's busy threshold is percent).
                pct = round(s.utilization * 100, 1)
                util = metrics.get((pct, t, status, "dcgm")) or interned(pct, t, status, "dcgm")
                power = metrics.get((s.power_w, t, status, "dcgm")) or interned(
                    s.power_w, t, status, "dcgm"
                )
            gpu = Gpu.model_construct(
                uuid=uuid,
                index=placer.card_index[uuid],
                model=card.model,
                node=name,
                memory_total_bytes=total_m,
                memory_used_bytes=used,
                utilization=util,
                power_w=power,
                sharing=card.sharing,
                clients=clients,
            )
            gpu_cache[uuid] = (s, clients, status, gpu)
            gpus.append(gpu)
        counts = placer.scheduler_counts(name, eng.state.t)
        scheduler = self._scheduler.get(counts)
        if scheduler is None:
            scheduler = self._scheduler[counts] = SchedulerView(
                gpu_allocatable=counts[0], gpu_allocated=counts[1]
            )
        taints: tuple[Taint, ...] = (UNREACHABLE,) if run.lost else ()
        if run.cordoned:
            taints += (UNSCHEDULABLE,)
        mem = run.memory_sample
        return Node.model_construct(
            name=name,
            labels=dict(spec.labels),
            taints=taints,
            cordoned=run.cordoned,
            cordoned_by_steward=run.cordoned_by_steward,
            ready=not run.lost,
            memory_total_bytes=spec.memory_bytes,
            memory_used_bytes=self.metric(
                float(mem[1]) if mem else None,
                mem[0] if mem else None,
                "node-exporter",
                self.node_stale_after_s,
            ),
            unified_memory=spec.unified_memory,
            gpus=tuple(gpus),
            scheduler=scheduler,
        )

    def _status(self, t: float | None) -> MetricStatus:
        if t is None:
            return "missing"
        age = self.engine.state.t - t
        if age > MISSING_AFTER_S:
            return "missing"
        return "fresh" if age <= self.node_stale_after_s else "stale"

    def _workload(self, name: str) -> Workload:
        eng = self.engine
        spec = eng.specs[name]
        run = eng.state.workloads[name]
        s = run.sample
        t = s[0] if s else None

        def m(i: int) -> Metric:
            return self.metric(s[i] if s else None, t, "gateway")

        placement = tuple(self._placement(r) for r in run.replicas)
        ready = sum(1 for r in run.replicas if r.phase == "ready")
        return Workload.model_construct(
            name=name,
            kind=spec.kind,
            pool=spec.pool,
            desired_replicas=run.desired,
            ready_replicas=ready,
            cards_per_replica=spec.cards_per_replica,
            nodes_per_replica=spec.nodes_per_replica,
            model=spec.model,
            context_length=spec.context_length,
            queue_depth=m(1),
            queue_wait_s=m(2),
            tokens_per_s=m(3),
            ttft_s=m(4),
            itl_s=m(9),
            prompt_tokens_per_s=m(10),
            requests_per_s=m(11),
            kv_cache_usage=m(8),
            rated_tok_s=spec.serving.aggregate_peak_tok_s if spec.serving else None,
            serving_profile=self._profile(spec),
            requests_running=m(5),
            context_refused_tokens=m(6),
            longest_request_tokens=m(7),
            placement=placement,
            labels=dict(spec.labels),
            annotations=dict(spec.annotations)
            if run.accepting
            else {**spec.annotations, CLOSED: "false"},
        )

    def _profile(self, spec: WorkloadSpec) -> ServingProfile | None:
        """The catalogue's profile of one replica, as the simulator serves it: a decode step of b
        streams takes a + c*b (lab.sim.serving.decode_step_s), which is ITL(b)."""
        found = self._profiles.get(spec.name)
        if found is None and spec.serving is not None and not spec.runs_jobs:
            from lab.sim.serving import decode_step_s

            serving = spec.serving
            base, per_seq = decode_step_s(serving)
            found = self._profiles[spec.name] = ServingProfile(
                prefill_tok_s=serving.prefill_tok_s,
                itl_base_s=max(0.0, base),
                itl_per_seq_s=per_seq,
                kv_tokens=spec.kv_capacity_tokens or None,
                max_num_seqs=serving.max_num_seqs,
                load_s=spec.load_s,
            )
        return found

    def _placement(self, r: Replica) -> ReplicaPlacement:
        waiting = None if r.nodes else r.since_s
        key = (r.client, r.phase == "ready", tuple(r.cards), waiting)
        cached = self._placements.get(key)
        if cached is None:
            if len(self._placements) > 65536:
                self._placements.clear()
            cached = self._placements[key] = ReplicaPlacement(
                index=r.index,
                nodes=tuple(r.nodes),
                gpus=key[2],
                ready=key[1],
                waiting_since=None if waiting is None else self.at(waiting),
            )
        return cached

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
