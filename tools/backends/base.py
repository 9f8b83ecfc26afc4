"""The seams between the agent and whatever runs the workloads, one Protocol per concern.

- `Orchestrator`: observe nodes and workloads; scale, place, cordon, uncordon; start a drain and
  report its progress (a drain is started, then followed tick by tick: it never blocks the loop).
- `Gateway`: the serving front of each workload: accepting or not, requests in flight, a probe.
- `Fabric`: the links between nodes.
- `MetricSource`: readings with their freshness (Prometheus, NVML), merged into the observation.
- `Persistence`: backends that keep state of their own (the simulator) save it.

`Cluster` is the three that act (orchestrator, gateway, fabric) in one; tools/backends/parts.py
puts a cluster together from parts. Every primitive takes `dry_run`: then it validates and reports
what it would do, and changes nothing. Mode rotation is composed from these primitives in
tools/modes/, never hidden inside a backend. A backend knows nothing of policies: whoever calls
it has already been allowed to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from tools.model import ClusterState, Link
from tools.results import ActionResult, DrainOutcome, DrainProgress, DrainResult, ProbeResult

__all__ = [
    "ActionResult",
    "Cluster",
    "DrainOutcome",
    "DrainProgress",
    "DrainResult",
    "Fabric",
    "Gateway",
    "MetricSource",
    "Orchestrator",
    "Persistence",
    "ProbeResult",
]


@runtime_checkable
class Orchestrator(Protocol):
    """Nodes and workloads: what runs where, and the primitives that change it.

    Raise tools.errors.TemporaryError for what a retry fixes, PermanentError otherwise.
    """

    def observe(self) -> ClusterState: ...

    def scale(self, workload: str, replicas: int, *, dry_run: bool = False) -> ActionResult: ...

    def place(
        self, workload: str, node: str, gpus: tuple[str, ...] = (), *, dry_run: bool = False
    ) -> ActionResult: ...

    def cordon(self, node: str, *, dry_run: bool = False) -> ActionResult: ...

    def uncordon(self, node: str, *, dry_run: bool = False) -> ActionResult: ...

    def start_drain(self, node: str, deadline_s: float, *, dry_run: bool = False) -> DrainResult:
        """Cordon the node and start evicting its replicas, each given `deadline_s` to finish
        what it serves; returns at once (follow it with `drain_status`)."""
        ...

    def drain_status(self, node: str) -> DrainProgress: ...


@runtime_checkable
class Gateway(Protocol):
    """The serving front of the workloads."""

    def probe(self, workload: str, *, dry_run: bool = False) -> ProbeResult: ...

    def set_accepting(
        self, workload: str, accepting: bool, *, dry_run: bool = False
    ) -> ActionResult:
        """Open or close the gateway to a workload: closed, its replicas admit no new request
        (requests wait in its queue) and finish the ones in flight. Used to drain a mode before
        a rotation and to let the new mode take traffic only after its probe passed."""
        ...

    def in_flight(self, workload: str) -> int:
        """Requests the workload's replicas are serving now (admitted, not yet complete)."""
        ...


@runtime_checkable
class Fabric(Protocol):
    """The links between nodes (RDMA paths, their speed and GID index), read now."""

    def link_status(self, link: str) -> Link: ...


@runtime_checkable
class Cluster(Orchestrator, Gateway, Fabric, Protocol):
    """What the loop acts on: the orchestrator, the gateway and the fabric in one."""


@runtime_checkable
class MetricSource(Protocol):
    """Readings from where users already have them (Prometheus, NVML), with their freshness.

    `read` returns the observation with this source's readings merged in: each `Metric` with its
    value, status (fresh / stale / missing), when it was observed and the source's name. What it
    could not read is marked stale or missing, never invented, and it never raises for a source
    that is down: that is a reading's status, not an error.
    """

    name: str

    def read(self, state: ClusterState) -> ClusterState: ...


@runtime_checkable
class Persistence(Protocol):
    """A backend that keeps state of its own (the simulator) saves it in the data dir."""

    def save(self, data_dir: Path) -> object: ...
