"""The `Cluster` protocol: the seam between the agent and whatever runs the workloads.

A backend observes the cluster and carries out primitive actions. Every primitive takes
`dry_run`: then it validates and reports what it would do, and changes nothing. Mode rotation is
composed from these primitives in tools/modes.py, never hidden inside a backend. A backend knows
nothing of policies: whoever calls it has already been allowed to.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from tools.model import ClusterState, Link


class ActionResult(BaseModel):
    """What one primitive did (or, in dry-run, would do)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    dry_run: bool
    message: str
    changed: bool = False


class ProbeResult(BaseModel):
    """A real request through a workload's serving endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workload: str
    ok: bool
    ready_replicas: int
    tokens_per_s: float | None = None
    context_length: int | None = None
    latency_s: float | None = None
    message: str = ""


DrainOutcome = Literal["drained", "deadline", "failed"]


class DrainResult(ActionResult):
    outcome: DrainOutcome = "drained"
    in_flight_aborted: int = 0


@runtime_checkable
class Cluster(Protocol):
    """What Steward needs from a cluster.

    Raise tools.errors.TemporaryError for what a retry fixes, PermanentError otherwise.
    """

    def observe(self) -> ClusterState: ...

    def scale(self, workload: str, replicas: int, *, dry_run: bool = False) -> ActionResult: ...

    def place(
        self, workload: str, node: str, gpus: tuple[str, ...] = (), *, dry_run: bool = False
    ) -> ActionResult: ...

    def cordon(self, node: str, *, dry_run: bool = False) -> ActionResult: ...

    def uncordon(self, node: str, *, dry_run: bool = False) -> ActionResult: ...

    def drain(self, node: str, deadline_s: float, *, dry_run: bool = False) -> DrainResult: ...

    def probe(self, workload: str, *, dry_run: bool = False) -> ProbeResult: ...

    def link_status(self, link: str) -> Link: ...

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
