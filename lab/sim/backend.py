"""The embedded simulated cluster: the default backend of `steward run`, the tests and the evals.

`SimCluster` implements the `Cluster` protocol over the simulator in lab/sim: observe, scale,
place, cordon, uncordon, drain, probe and link_status, each with `dry_run`. On top of the
protocol it has a virtual clock (`now`, `advance`), fault injection (`inject`), the time series
of what it served (`series`), and persistence in a data dir (`open`, `save`) so that successive
commands see the same cluster. The same scenario and seed give the same observations and series.

Primitives only: mode rotation is composed from them elsewhere (tools/modes.py). The sim still
enforces what the hardware enforces: a replica whose memory does not fit on its node is refused
(`scale` answers ok=False and names who holds the memory), so `beast` and the residents cannot
all be up at once, and replicas take their model's load time to become ready.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from lab.sim import control, lifecycle, store
from lab.sim.clock import Pacer
from lab.sim.demand import Generator
from lab.sim.engine import Engine
from lab.sim.faults import Fault, FaultBook
from lab.sim.scenario import Scenario
from lab.sim.series import SeriesPoint, SimSeries
from lab.sim.snapshot import SnapshotBuilder
from lab.sim.state import GeneratorState, NodeRun, SimState, WorkloadRun
from tools.errors import BackendUnavailable, InvalidInput
from tools.model import ClusterState, Link
from tools.results import ActionResult, DrainProgress, DrainResult, ProbeResult

PROBE_PROMPT_TOKENS = 512
PROBE_OUTPUT_TOKENS = 64


class SimCluster:
    """A deterministic simulated cluster (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        sleep: Callable[[float], None] = time.sleep,
        _saved: store.Saved | None = None,
    ) -> None:
        self.scenario = scenario
        self.data_dir: Path | None = None
        """Where `open` found or created it; `save()` writes there by default."""
        self.profile = scenario.build_profile()
        self.clock = Pacer(scenario.start, scenario.speed, sleep)
        self.injected: list[Fault] = list(_saved.injected) if _saved else []
        faults = FaultBook((*scenario.faults, *self.injected))
        generators = [
            Generator(spec, scenario.seed * 1_000_003 + i, scenario.start)
            for i, spec in enumerate(scenario.demand)
        ]
        state = _saved.state if _saved else SimState()
        if _saved:
            for gen, gs in zip(generators, _saved.generators, strict=True):
                gen.next_s, gen.cursor, gen.primed = gs.next_s, gs.cursor, gs.primed
                version, internal, gauss = gs.rng
                gen.rng.setstate((version, tuple(internal), gauss))  # type: ignore[arg-type]
        self.engine = Engine(self.profile, state, faults, generators)
        if not _saved:
            self._populate()
        self.builder = SnapshotBuilder(self.engine, scenario.start)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> SimCluster:
        return cls(scenario)

    @classmethod
    def homelab(cls, seed: int = 0) -> SimCluster:
        return cls(Scenario(seed=seed))

    @classmethod
    def open(cls, data_dir: Path, scenario: Scenario | None = None) -> SimCluster:
        """The cluster saved in `data_dir`; a new one (saved there) if there is none, or if
        `scenario` is given and differs from the saved one's."""
        saved = store.load(data_dir)
        if saved is not None and (scenario is None or saved.scenario == scenario):
            sim = cls(saved.scenario, _saved=saved)
        else:
            sim = cls(scenario or Scenario())
            sim.save(data_dir)
        sim.data_dir = data_dir
        return sim

    def save(self, data_dir: Path | None = None) -> Path:
        """Persist the whole cluster in `data_dir` (default: the one it was opened from)."""
        data_dir = data_dir or self.data_dir
        if data_dir is None:
            raise ValueError("save() needs a data dir: this cluster was not opened from one")
        gens = [
            GeneratorState(g.next_s, g.cursor, g.primed, list(g.rng.getstate()))
            for g in self.engine.generators
        ]
        saved = store.Saved(
            scenario=self.scenario,
            injected=tuple(self.injected),
            generators=gens,
            state=self.engine.state,
        )
        return store.save(data_dir, saved)

    def _populate(self) -> None:
        """Every workload at its initial replicas, placed and already serving at t=0."""
        st = self.engine.state
        initial = {w.name: w.replicas for w in self.profile.workloads}
        active = self.scenario.mode or self.profile.default_mode
        if active is not None:
            for mode in self.profile.modes:
                for w in mode.workloads:
                    initial[w] = 1 if mode.name == active else 0
        initial.update(self.scenario.replicas)
        st.nodes = {n.name: NodeRun() for n in self.profile.nodes}
        st.workloads = {w.name: WorkloadRun(desired=0) for w in self.profile.workloads}
        for spec in self.profile.workloads:
            run = st.workloads[spec.name]
            run.desired = initial[spec.name]
            lifecycle.reconcile(self.engine, spec.name, run, 0.0)
            for r in run.replicas:
                if r.phase == "pending":
                    reason = self.engine.placer.find(spec, 0.0)
                    raise InvalidInput(
                        f"scenario {self.scenario.name!r}: replicas.{spec.name} "
                        f"({run.desired}) cannot all start: {reason}"
                    )
                r.phase, r.since_s = "ready", -self.scenario.up_since_s
            lifecycle.recount(run)
        self.engine.scrape_all()
        st.next_series_s = self.profile.series_interval_s

    # -- time, faults, series ---------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return self.clock.at(self.engine.state.t)

    @property
    def elapsed_s(self) -> float:
        return self.engine.state.t

    def advance(self, seconds: float) -> None:
        """Run the world for `seconds` of simulated time (paced if the scenario's speed > 0)."""
        if seconds < 0:
            raise ValueError(f"cannot advance by a negative time ({seconds} s)")
        st = self.engine.state
        end = st.t + seconds
        tick = self.profile.tick_s
        self.clock.pace(st.t)
        while st.t < end - 1e-9:
            self.engine.step(min(tick, end - st.t))
            self.clock.pace(st.t)

    def inject(self, fault: Fault) -> None:
        """Add a fault; its `at_s` counts from now (0: at once)."""
        fault = fault.model_copy(update={"at_s": self.engine.state.t + fault.at_s})
        self.injected.append(fault)
        self.engine.faults.add(fault)
        self.engine.dirty_nodes.update(self.engine.state.nodes)
        self.engine.dirty_links = True
        self.engine.version += 1

    def series(self, workload: str | None = None, since_s: float = 0.0) -> SimSeries:
        """Series points in time order (the last day at most; the last hour after `open`),
        optionally of one workload and from `since_s` seconds after the start."""
        return SimSeries(
            points=tuple(
                SeriesPoint(at=self.clock.at(r.t), elapsed_s=r.t, **_fields(r))
                for r in self.engine.state.series
                if r.t >= since_s and (workload is None or r.workload == workload)
            )
        )

    # -- the Cluster protocol -------------------------------------------------------------------

    def _api(self, operation: str) -> None:
        """Raise the transient error an injected `api_errors` fault asks for, if any is left."""
        used = self.engine.state.api_errors_used
        found = self.engine.faults.api_error(operation, self.engine.state.t, used)
        if found is None:
            return
        index, count = found
        used[index] = used.get(index, 0) + 1
        raise BackendUnavailable(
            f"simulated API: {operation} failed with HTTP 503 (injected api_errors fault, "
            f"{used[index]} of {count}); retry"
        )

    def observe(self) -> ClusterState:
        self._api("observe")
        return self.builder.build()

    def scale(self, workload: str, replicas: int, *, dry_run: bool = False) -> ActionResult:
        self._api("scale")
        return control.scale(self.engine, workload, replicas, dry_run)

    def place(
        self, workload: str, node: str, gpus: tuple[str, ...] = (), *, dry_run: bool = False
    ) -> ActionResult:
        self._api("place")
        return control.place(self.engine, workload, node, gpus, dry_run)

    def cordon(self, node: str, *, dry_run: bool = False) -> ActionResult:
        self._api("cordon")
        return control.set_cordon(self.engine, node, True, dry_run, by_steward=True)

    def uncordon(self, node: str, *, dry_run: bool = False) -> ActionResult:
        self._api("uncordon")
        return control.set_cordon(self.engine, node, False, dry_run)

    def start_drain(self, node: str, deadline_s: float, *, dry_run: bool = False) -> DrainResult:
        """Cordon `node` and start terminating its replicas, each with `deadline_s` to finish its
        in-flight requests (what is still running then is aborted); returns at once."""
        self._api("drain")
        control.check_node(self.engine, node)
        if deadline_s <= 0:
            raise InvalidInput(f"drain {node}: deadline_s must be > 0, got {deadline_s}")
        on_node = self.engine.replicas_on(node)
        in_flight = sum(self.engine.replica_in_flight(r) for r in on_node)
        names = ", ".join(r.client for r in on_node) or "nothing"
        if dry_run:
            return DrainResult(
                ok=True,
                dry_run=True,
                message=f"would cordon {node} and evict {names} ({in_flight} request(s) in flight)",
            )
        control.evict(self.engine, node, deadline_s)
        return DrainResult(
            ok=True,
            dry_run=False,
            changed=True,
            message=f"draining {node}: evicting {names} ({in_flight} request(s) in flight)",
        )

    def drain_status(self, node: str) -> DrainProgress:
        self._api("drain_status")
        control.check_node(self.engine, node)
        left = self.engine.replicas_on(node)
        in_flight = sum(self.engine.replica_in_flight(r) for r in left)
        return DrainProgress(
            node=node,
            replicas_left=len(left),
            in_flight=in_flight,
            message=f"{len(left)} replica(s) left on {node}, {in_flight} request(s) in flight",
        )

    def drain(self, node: str, deadline_s: float, *, dry_run: bool = False) -> DrainResult:
        """`start_drain`, then advance simulated time until the node is empty: a one-shot drain
        for tests and sim-only tools (the loop follows a drain tick by tick instead)."""
        started = self.start_drain(node, deadline_s, dry_run=dry_run)
        if dry_run:
            return started
        names = ", ".join(r.client for r in self.engine.replicas_on(node)) or "nothing"
        deadline = self.engine.state.t + deadline_s
        aborted = 0
        progress = self.drain_status(node)
        while not progress.done:
            if self.engine.state.t >= deadline - 1e-9 and not aborted:
                aborted = progress.in_flight
            self.advance(self.profile.tick_s)
            progress = self.drain_status(node)
        return DrainResult(
            ok=True,
            dry_run=False,
            changed=True,
            outcome="deadline" if aborted else "drained",
            in_flight_aborted=aborted,
            message=f"drained {node}: evicted {names}"
            + (f"; {aborted} request(s) aborted at the deadline" if aborted else ""),
        )

    def set_accepting(
        self, workload: str, accepting: bool, *, dry_run: bool = False
    ) -> ActionResult:
        """Open or close the workload's gateway; closed, its queue holds new requests."""
        self._api("set_accepting")
        return control.set_accepting(self.engine, workload, accepting, dry_run)

    def in_flight(self, workload: str) -> int:
        self._api("in_flight")
        run = self.engine.state.workloads.get(workload)
        if run is None:
            raise InvalidInput(f"no workload named {workload!r}")
        return sum(self.engine.replica_in_flight(r) for r in run.replicas)

    def probe(self, workload: str, *, dry_run: bool = False) -> ProbeResult:
        """A real request through the endpoint: answers with the serving figures it measures.

        A probe changes nothing, so `dry_run` probes too."""
        self._api("probe")
        spec = self.engine.specs.get(workload)
        if spec is None:
            raise InvalidInput(f"no workload named {workload!r}")
        run = self.engine.state.workloads[workload]
        ready = self.engine.ready_count(run)
        if ready == 0:
            return ProbeResult(
                workload=workload, ok=False, ready_replicas=0, message="no ready replica answers"
            )
        if self.engine.faults.probe_fails(workload, self.engine.state.t):
            return ProbeResult(
                workload=workload,
                ok=False,
                ready_replicas=ready,
                message=f"{workload}: the endpoint answered HTTP 500 (injected probe_failing)",
            )
        if spec.serving is None:
            return ProbeResult(workload=workload, ok=True, ready_replicas=ready, message="alive")
        speed = self.engine.serving_speed(workload, self.engine.state.t)
        tok_s = spec.serving.single_stream_tok_s * speed
        latency = PROBE_PROMPT_TOKENS / (spec.serving.prefill_tok_s * speed)
        latency += PROBE_OUTPUT_TOKENS / tok_s
        return ProbeResult(
            workload=workload,
            ok=True,
            ready_replicas=ready,
            tokens_per_s=round(tok_s, 2),
            context_length=spec.context_length,
            latency_s=round(latency, 3),
            message=f"{PROBE_OUTPUT_TOKENS} tokens at {tok_s:.1f} tok/s",
        )

    def link_status(self, link: str) -> Link:
        self._api("link_status")
        found = next((lk for lk in self.observe().links if lk.name == link), None)
        if found is None:
            known = ", ".join(lk.name for lk in self.profile.links) or "none"
            raise InvalidInput(f"no link named {link!r} (known: {known})")
        return found


def _fields(row: object) -> dict[str, object]:
    return {f: getattr(row, f) for f in SeriesPoint.model_fields if f not in ("at", "elapsed_s")}
