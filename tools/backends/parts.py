"""A cluster put together from its parts: one orchestrator, gateway and fabric, metric sources,
persistence and a clock — what the composition root hands the loop.

`Parts.of(cluster)` takes one object that is all three (the simulator, the Kubernetes backend)
and finds the rest by what it can do: a backend with a virtual clock (`now` + `advance`) is
ticked by the loop and its clock is the loop's; one that can `save` is saved between decisions.
Nothing here knows which backend it is given.

`ComposedCluster` is the `Cluster` the loop acts on: it delegates each primitive to the part for
that concern, and `observe` merges every metric source's readings into the orchestrator's view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tools.backends.base import (
    ActionResult,
    Cluster,
    DrainProgress,
    DrainResult,
    Fabric,
    Gateway,
    MetricSource,
    Orchestrator,
    Persistence,
    ProbeResult,
)
from tools.clock import Clock, VirtualClock, WallClock
from tools.errors import Fenced
from tools.model import ClusterState, Link


@dataclass(frozen=True)
class Parts:
    """The parts of one cluster (several may be the same object)."""

    orchestrator: Orchestrator
    gateway: Gateway
    fabric: Fabric
    sources: tuple[MetricSource, ...] = ()
    persistence: Persistence | None = None
    clock: Clock = field(default_factory=WallClock)
    """The cluster's time: the wall clock, or the simulator's virtual one."""
    advance: Callable[[float], None] | None = None
    """For a world that moves only when told (the simulator): let that many seconds pass. The
    loop calls it once per tick; a real cluster's time passes by itself (None)."""

    @classmethod
    def of(cls, cluster: Cluster, sources: tuple[MetricSource, ...] = ()) -> Parts:
        clock: Clock = WallClock()
        advance: Callable[[float], None] | None = None
        if _advancing(cluster):
            clock = VirtualClock(cluster)  # type: ignore[arg-type]
            advance = cluster.advance  # type: ignore[attr-defined]
        persistence = cluster if isinstance(cluster, Persistence) else None
        return cls(cluster, cluster, cluster, sources, persistence, clock, advance)

    def cluster(self, may_act: Callable[[], bool] | None = None) -> ComposedCluster:
        """The loop's view; with `may_act`, every change (not a dry run) is fenced by it."""
        return ComposedCluster(self, may_act)

    def save(self, data_dir: Path) -> None:
        if self.persistence is not None:
            self.persistence.save(data_dir)


def _advancing(obj: object) -> bool:
    return callable(getattr(obj, "advance", None)) and hasattr(type(obj), "now")


class ComposedCluster:
    """The loop's `Cluster`: each concern served by its part (see the module docstring).

    With `may_act`, a change (any primitive but a dry run, a read or a probe) is refused with
    `Fenced` whenever it answers False: a replica that lost its leadership mid-action stops
    there, whatever code path (an action, a rotation's saga) was about to change the cluster.
    """

    def __init__(self, parts: Parts, may_act: Callable[[], bool] | None = None) -> None:
        self.parts = parts
        self._o = parts.orchestrator
        self._g = parts.gateway
        self._f = parts.fabric
        self._may_act = may_act

    def _fence(self, what: str, dry_run: bool) -> None:
        if not dry_run and self._may_act is not None and not self._may_act():
            raise Fenced(f"{what}: refused, this replica does not lead now (fenced)")

    def observe(self) -> ClusterState:
        state = self._o.observe()
        for source in self.parts.sources:
            state = source.read(state)
        return state

    def scale(self, workload: str, replicas: int, *, dry_run: bool = False) -> ActionResult:
        self._fence(f"scale {workload}", dry_run)
        return self._o.scale(workload, replicas, dry_run=dry_run)

    def place(
        self, workload: str, node: str, gpus: tuple[str, ...] = (), *, dry_run: bool = False
    ) -> ActionResult:
        self._fence(f"place {workload}", dry_run)
        return self._o.place(workload, node, gpus, dry_run=dry_run)

    def cordon(self, node: str, *, dry_run: bool = False) -> ActionResult:
        self._fence(f"cordon {node}", dry_run)
        return self._o.cordon(node, dry_run=dry_run)

    def uncordon(self, node: str, *, dry_run: bool = False) -> ActionResult:
        self._fence(f"uncordon {node}", dry_run)
        return self._o.uncordon(node, dry_run=dry_run)

    def start_drain(self, node: str, deadline_s: float, *, dry_run: bool = False) -> DrainResult:
        return self._o.start_drain(node, deadline_s, dry_run=dry_run)

    def drain_status(self, node: str) -> DrainProgress:
        return self._o.drain_status(node)

    def probe(self, workload: str, *, dry_run: bool = False) -> ProbeResult:
        return self._g.probe(workload, dry_run=dry_run)

    def set_accepting(
        self, workload: str, accepting: bool, *, dry_run: bool = False
    ) -> ActionResult:
        self._fence(f"set_accepting {workload}", dry_run)
        return self._g.set_accepting(workload, accepting, dry_run=dry_run)

    def in_flight(self, workload: str) -> int:
        return self._g.in_flight(workload)

    def link_status(self, link: str) -> Link:
        return self._f.link_status(link)
