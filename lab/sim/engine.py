"""The simulation engine: one tick of the world, and where replicas can go.

Each `step(dt)` does, in order: fault transitions (a node lost or back), arrivals into the
queues, replica life cycles (start-up delay, drain, exit, eviction, reconcile to the desired
count), serving, then the scrapes that fall in this tick and a series point when one is due.

Metrics are scraped the way Prometheus would: per node (and per workload, per link) every
`scrape_interval_s`, staggered across entities, so a snapshot's `observed_at` times are real
and a lost node's readings age into stale, then missing. The engine marks what a tick changed
(`dirty_nodes`, `dirty_workloads`, `dirty_links`) so snapshots rebuild only that.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from lab.sim import jobs, lifecycle, metrics, router
from lab.sim.demand import Generator, Request
from lab.sim.faults import FaultBook
from lab.sim.placement import Placer
from lab.sim.profiles import Profile, WorkloadSpec
from lab.sim.serving import COUNT_EPS, Server, Window, step
from lab.sim.state import NodeRun, Replica, SimState, WorkloadRun


@dataclass(frozen=True, slots=True)
class TpLink:
    """The link a multi-node workload's tensor-parallel traffic crosses."""

    link: str
    paths: tuple[tuple[str, float], ...]  # (path name, healthy Gb/s)
    gid_index: int


TP_COMM_SHARE = 0.3
"""Share of a TP=2 decode step spent in all-reduce over a healthy link (estimate). A path at
fraction f of healthy makes that share 1/f times longer."""

SOCKET_FALLBACK = 0.05
"""A path without RDMA (wrong GID index) drags NCCL to its socket transport: ~5 % of RDMA."""


class Engine:
    """The moving world: a profile, its state, its faults and its demand."""

    def __init__(
        self, profile: Profile, state: SimState, faults: FaultBook, generators: list[Generator]
    ) -> None:
        self.profile = profile
        self.state = state
        self.faults = faults
        self.generators = generators
        self.specs: dict[str, WorkloadSpec] = {w.name: w for w in profile.workloads}
        """What each workload is declared to be (its profile: what controllers are told)."""
        self.true_speed: dict[str, float] = {}
        """Per workload, its true serving speed over its profile's (1 where absent): a benchmark
        hides a draw here; only the serving itself (and a probe, which measures it) sees it."""
        self.pool_members: dict[str, tuple[str, ...]] = {p.name: p.workloads for p in profile.pools}
        self.placer = Placer(profile, state, faults)
        self.kv_capacity = {w.name: w.kv_capacity_tokens for w in profile.workloads}
        self.tp_links = {w.name: self._tp_link(w) for w in profile.workloads}
        self.n_buckets = max(1, round(profile.scrape_interval_s / profile.tick_s))
        node_every = profile.node_scrape_interval_s or profile.scrape_interval_s
        self.node_buckets = self._buckets(
            [n.name for n in profile.nodes], max(1, round(node_every / profile.tick_s))
        )
        self.workload_buckets = self._buckets(list(self.specs), self.n_buckets)
        self.dirty_nodes: set[str] = {n.name for n in profile.nodes}
        self.dirty_workloads: set[str] = set(self.specs)
        self.dirty_links = True
        self._lost: set[str] = {name for name, node in state.nodes.items() if node.lost}
        self.request_windows: dict[str, Window] = {}
        """Per workload, a window more that each of its requests' events reach (admitted, first
        token, finished), beside its scrape and series windows, and that the engine never
        resets: the twin's engine exporters keep every request's latencies there."""
        self.version = 0
        """Bumped whenever anything observable may have changed."""

    # -- time ---------------------------------------------------------------------------------

    def step(self, dt: float) -> None:
        st = self.state
        t0, t1 = st.t, st.t + dt
        self._apply_node_faults(t0)
        for name, run in st.workloads.items():
            if lifecycle.advance(self, name, run, t0):
                self.dirty_workloads.add(name)
        for name, run in st.workloads.items():
            self._serve(name, run, t0, dt)
        # Requests arriving during this step queue for the next one: nobody is served before
        # arriving, and a wait is never negative (it is at most one tick too long).
        for gen in self.generators:
            for req in gen.window(t0, t1):
                self.route(req)
        st.t = t1
        st.ticks += 1
        self._scrape_due()
        if st.t + 1e-9 >= st.next_series_s:
            metrics.record_series(self)
            st.next_series_s += self.profile.series_interval_s
        self.version += 1

    def _apply_node_faults(self, t: float) -> None:
        lost = self.faults.lost_nodes(t)
        nodes = self.state.nodes
        was_lost = {name for name in self._lost if nodes[name].lost}
        for name in sorted(lost ^ was_lost):  # sorted: the same order on every run
            node = nodes[name]
            node.lost = name in lost
            lifecycle.node_changed(self, name, lost=node.lost, t=t)
            self.dirty_nodes.add(name)
        self._lost = lost
        if lost:
            self.dirty_nodes.update(lost)  # their readings age: stale, then missing
            self.dirty_links = True

    # -- demand -------------------------------------------------------------------------------

    def route(self, req: Request) -> None:
        """Queue a request at its workload, or at the least-loaded serving workload of its pool;
        a cohort is shared among the pool's serving workloads by their ready replicas."""
        members = self.pool_members.get(req.target)
        runs = self.state.workloads
        if members is None:
            if req.target in runs:
                runs[req.target].queue.append(req)
            return
        serving = [m for m in members if runs[m].accepting and self.ready_count(runs[m]) > 0]
        if req.count > 1 and len(serving) > 1:
            ready = [self.ready_count(runs[m]) for m in serving]
            total, given = sum(ready), 0
            for m, n in zip(serving, ready, strict=True):
                k = req.count * n // total if m != serving[-1] else req.count - given
                given += k
                if k:
                    runs[m].queue.append(
                        Request(req.arrival_s, req.input_tokens, req.output_tokens, req.target, k)
                    )
            return
        if len(serving) == 1:  # the common case: no load to compare
            name = serving[0]
        elif serving:
            name = min(serving, key=lambda m: self._load(runs[m]))
        else:
            wanted = [m for m in members if runs[m].desired > 0]
            name = wanted[0] if wanted else members[0]
        runs[name].queue.append(req)

    def _load(self, run: WorkloadRun) -> float:
        """Waiting plus running requests per ready replica (what a least-loaded router sees)."""
        held = sum(
            r.server.waiting_n + r.server.in_flight for r in run.replicas if r.phase == "ready"
        )
        return (sum(r.count for r in run.queue) + held) / self.ready_count(run)

    @staticmethod
    def ready_count(run: WorkloadRun) -> int:
        return run.ready

    def _serve(self, name: str, run: WorkloadRun, t: float, dt: float) -> None:
        spec = self.specs[name]
        if spec.runs_jobs:
            jobs.serve(run, spec, t, dt)
            return
        if spec.serving is None:
            for r in run.replicas:
                if r.phase == "ready":
                    r.server.busy_s += dt * spec.busy_utilization
            return
        if run.queue and run.desired == 0:
            self._reroute(name, run)
        extra = self.request_windows.get(name)
        windows = (run.scrape, run.series) if extra is None else (run.scrape, run.series, extra)
        before = run.series.tokens
        kv_capacity = self.kv_capacity[name]
        if run.queue and run.accepting and run.ready:
            router.dispatch(
                run,
                t=t,
                kv_capacity=kv_capacity,
                context_length=spec.context_length,
                windows=windows,
            )
        # Only replicas with work step (an idle one costs nothing), and an engine shared by
        # replicas alike steps once for all of them (lab.sim.router); a terminating replica
        # drains what it holds, its queue included, and is sent nothing new.
        busy: dict[int, list[Any]] = {}
        last: Server | None = None
        for r in run.replicas:
            server = r.server
            if r.phase not in {"ready", "terminating"}:
                continue
            if server is last:  # folded replicas sit side by side: the common case is cheap
                busy[id(server)][1] += 1
                continue
            if server.in_flight > COUNT_EPS or server.waiting_n > COUNT_EPS:
                found = busy.get(id(server))
                if found is None:
                    busy[id(server)] = [server, 1]
                else:
                    found[1] += 1
                last = server
        if busy:
            speed = self.serving_speed(name, t)
            for server, copies in busy.values():
                step(server, spec.serving, t=t, dt=dt, speed=speed,
                     kv_capacity=kv_capacity, windows=windows, copies=copies)  # fmt: skip
        run.tokens_total += run.series.tokens - before

    def replica_in_flight(self, r: Replica) -> int:
        """Requests one replica holds, running or waiting in its queue (whole: a replica
        folded with others holds its share of a cohort, a fraction, lab.sim.router)."""
        return round(r.server.in_flight + r.server.waiting_n)

    def steady_utilization(self, r: Replica) -> float:
        """A ready replica's card share at its first reading: a batch worker's steady load, a
        render replica's only while it runs a job."""
        spec = self.specs[r.workload]
        if spec.runs_jobs and not r.server.in_flight:
            return 0.0
        return spec.busy_utilization

    def replica_busy_s(self, r: Replica) -> float:
        """Cumulative busy seconds of one replica until now (a step running, for a serving
        replica: a step that runs past now counts up to now)."""
        server = r.server
        return server.busy_s - r.busy_offset - max(0.0, server.clock - self.state.t)

    def _reroute(self, name: str, run: WorkloadRun) -> None:
        """A workload scaled to zero hands the requests the pool's router sent it to a serving
        sibling; requests that asked for this workload by name (its model) stay and wait for
        it to come back (a rotation), as a gateway routing by model name would keep them."""
        spec = self.specs[name]
        siblings = [m for m in self.pool_members.get(spec.pool, ()) if m != name]
        runs = self.state.workloads
        target = next(
            (m for m in siblings if runs[m].accepting and self.ready_count(runs[m])), None
        )
        if target is None:
            return
        moving = [r for r in run.queue if r.target != name]
        if moving:
            self.state.workloads[target].queue.extend(moving)
            kept = [r for r in run.queue if r.target == name]
            run.queue.clear()
            run.queue.extend(kept)
            self.dirty_workloads.update((name, target))

    # -- links ----------------------------------------------------------------------------------

    def _tp_link(self, spec: WorkloadSpec) -> TpLink | None:
        if spec.nodes_per_replica < 2 or not self.profile.links:
            return None
        link = self.profile.links[0]
        return TpLink(
            link.name, tuple((p.name, p.healthy_gbps) for p in link.paths), link.gid_index
        )

    def path_reading(
        self, link: str, path: str, healthy: float, gid: int, t: float
    ) -> tuple[float, int]:
        """What a path negotiates now and the GID index it uses."""
        spec = next(
            p for lk in self.profile.links if lk.name == link for p in lk.paths if p.name == path
        )
        frac = self.faults.path_fraction(link, path, t)
        gbps = spec.nominal_gbps * frac if frac < 1.0 else healthy
        changed = self.faults.gid_index(link, path, t)
        return gbps, gid if changed is None else changed

    def serving_speed(self, workload: str, t: float) -> float:
        """How fast the workload really serves now, against its profile: its true speed times
        its tensor-parallel link's health."""
        link = self.link_speed(workload, t) if self.tp_links.get(workload) else 1.0
        return link * self.true_speed.get(workload, 1.0)

    def link_speed(self, workload: str, t: float) -> float:
        """Throughput factor of a tensor-parallel workload given its link's health now."""
        tp = self.tp_links.get(workload)
        if tp is None:
            return 1.0
        healthy = 0.0
        usable: list[float] = []
        for path, healthy_gbps in tp.paths:
            gbps, gid = self.path_reading(tp.link, path, healthy_gbps, tp.gid_index, t)
            healthy += healthy_gbps
            usable.append(gbps if gid == tp.gid_index else 0.0)
        # NCCL stripes each collective evenly over the rails: the slowest one sets the pace.
        fraction = min(1.0, len(usable) * min(usable) / healthy) if healthy else 1.0
        if fraction <= 0:
            fraction = SOCKET_FALLBACK
        return 1.0 / ((1 - TP_COMM_SHARE) + TP_COMM_SHARE / fraction)

    # -- scrapes --------------------------------------------------------------------------------

    def _buckets(self, names: list[str], count: int) -> list[list[str]]:
        buckets: list[list[str]] = [[] for _ in range(count)]
        for name in names:
            buckets[zlib.crc32(name.encode()) % count].append(name)
        return buckets

    def _scrape_due(self) -> None:
        t = self.state.t
        down = self.faults.scrape_down
        for name in self.node_buckets[self.state.ticks % len(self.node_buckets)]:
            if not down("gpu", name, t):
                metrics.scrape_node(self, name)
            else:
                self.dirty_nodes.add(name)  # its last readings age
        k = self.state.ticks % self.n_buckets
        for name in self.workload_buckets[k]:
            if not down("gateway", name, t):
                metrics.scrape_workload(self, name)
            else:
                self.dirty_workloads.add(name)
        if k == 0:
            if not down("links", None, t):
                metrics.scrape_links(self)
            else:
                self.dirty_links = True

    def scrape_all(self) -> None:
        for node in self.profile.nodes:
            metrics.scrape_node(self, node.name)
        for name in self.specs:
            metrics.scrape_workload(self, name)
        metrics.scrape_links(self)

    # -- helpers for the control surface --------------------------------------------------------

    def replicas_on(self, node: str) -> list[Replica]:
        return [r for run in self.state.workloads.values() for r in run.replicas if node in r.nodes]

    def node_run(self, name: str) -> NodeRun:
        return self.state.nodes[name]
