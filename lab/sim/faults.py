"""Faults the simulator can inject, from the seeds' list of things that really went wrong.

Each fault is a pydantic spec with a `kind` tag, active from `at_s` (seconds since the scenario's
start) for `duration_s` (None: until the end). `FaultBook` answers, for a moment, what is broken:
the simulator asks it instead of keeping flags of its own, so a fault's effect is a pure function
of time and replays identically.

- `node_loss`: the node stops answering (NotReady); its replicas stop serving, its metrics go
  stale and then missing.
- `link_degraded`: one path of a link negotiates a fraction of its nominal speed (the seeds' 11 %
  after a pending reboot, 13-15 Gb/s per path after hot-plug).
- `gid_changed`: the RoCE GID index of a path is not the one configured (it changes after a reboot
  and NCCL does not warn); RDMA over that path fails.
- `probe_failing`: a workload's endpoint answers probes with errors.
- `api_errors`: the cluster API fails transiently (tools.errors.BackendUnavailable) for the next
  `count` calls of the named operations.
- `metrics_outage`: a metric source is down (the DCGM exporter of some nodes, the gateway's
  metrics, the link exporter): its readings stop and age into stale, then missing, while the
  nodes and workloads go on exactly as before.
- `mps_double_count`: the device plugin on a node does not advertise its MPS replicas, so the
  scheduler counts each client of a shared card as a whole card (used 2 / capacity 1) and refuses
  every further pod on the node.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from lab.sim.limits import MAX_SPAN_S

ApiOperation = Literal[
    "observe",
    "scale",
    "place",
    "cordon",
    "uncordon",
    "drain",
    "probe",
    "link_status",
    "set_accepting",
    "in_flight",
]


class _Fault(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at_s: float = Field(
        default=0.0, ge=0, le=MAX_SPAN_S, description="When it starts, seconds from the start."
    )
    duration_s: float | None = Field(
        default=None, gt=0, le=MAX_SPAN_S, description="None: until the end."
    )

    def active(self, t: float) -> bool:
        if t < self.at_s:
            return False
        return self.duration_s is None or t < self.at_s + self.duration_s


class NodeLoss(_Fault):
    kind: Literal["node_loss"] = "node_loss"
    node: str


class LinkDegraded(_Fault):
    kind: Literal["link_degraded"] = "link_degraded"
    link: str
    path: str
    fraction: float = Field(gt=0, le=1, description="Negotiated speed as a fraction of nominal.")


class GidChanged(_Fault):
    kind: Literal["gid_changed"] = "gid_changed"
    link: str
    path: str | None = Field(default=None, description="None: every path of the link.")
    gid_index: int = Field(ge=0, le=255)


class ProbeFailing(_Fault):
    kind: Literal["probe_failing"] = "probe_failing"
    workload: str


class ApiErrors(_Fault):
    kind: Literal["api_errors"] = "api_errors"
    count: int = Field(default=1, ge=1, le=1_000_000, description="How many calls fail.")
    operations: tuple[ApiOperation, ...] = ("scale", "place", "cordon", "uncordon", "drain")


class MpsDoubleCount(_Fault):
    kind: Literal["mps_double_count"] = "mps_double_count"
    node: str = "ws-1"


MetricSourceName = Literal["gpu", "gateway", "links", "all"]


class MetricsOutage(_Fault):
    kind: Literal["metrics_outage"] = "metrics_outage"
    source: MetricSourceName = "all"
    """`gpu`: the nodes' card exporters; `gateway`: the workloads' queue and token metrics;
    `links`: the fabric exporter; `all`: every one."""
    nodes: tuple[str, ...] = ()
    """For `gpu`: the nodes whose exporter is down (empty: every node)."""
    workloads: tuple[str, ...] = ()
    """For `gateway`: the workloads whose metrics stop (empty: every workload)."""


Fault = Annotated[
    NodeLoss
    | LinkDegraded
    | GidChanged
    | ProbeFailing
    | ApiErrors
    | MpsDoubleCount
    | MetricsOutage,
    Field(discriminator="kind"),
]


class FaultBook:
    """The faults of one run, and what they break at a given moment."""

    def __init__(self, faults: tuple[Fault, ...] = ()) -> None:
        self.faults: list[Fault] = list(faults)

    def add(self, fault: Fault) -> None:
        self.faults.append(fault)

    def lost_nodes(self, t: float) -> set[str]:
        return {f.node for f in self.faults if isinstance(f, NodeLoss) and f.active(t)}

    def path_fraction(self, link: str, path: str, t: float) -> float:
        """Negotiated speed as a fraction of the healthy one (1.0 when nothing is wrong)."""
        fractions = [
            f.fraction
            for f in self.faults
            if isinstance(f, LinkDegraded) and f.link == link and f.path == path and f.active(t)
        ]
        return min(fractions, default=1.0)

    def gid_index(self, link: str, path: str, t: float) -> int | None:
        """The GID index a fault set for the path, or None if no fault touches it."""
        for f in reversed(self.faults):
            if not isinstance(f, GidChanged) or f.link != link:
                continue
            if f.path in (None, path) and f.active(t):
                return f.gid_index
        return None

    def probe_fails(self, workload: str, t: float) -> bool:
        return any(
            isinstance(f, ProbeFailing) and f.workload == workload and f.active(t)
            for f in self.faults
        )

    def mps_double_count(self, node: str, t: float) -> bool:
        return any(
            isinstance(f, MpsDoubleCount) and f.node == node and f.active(t) for f in self.faults
        )

    def scrape_down(self, source: str, name: str | None, t: float) -> bool:
        """Whether `source` (gpu, gateway, links) cannot be scraped for `name` at `t`."""
        for f in self.faults:
            if not isinstance(f, MetricsOutage) or not f.active(t):
                continue
            if f.source not in ("all", source):
                continue
            names = f.nodes if source == "gpu" else f.workloads if source == "gateway" else ()
            if not names or name in names:
                return True
        return False

    def api_error(self, operation: str, t: float, used: dict[int, int]) -> tuple[int, int] | None:
        """An active api_errors fault covering `operation` with calls left to fail, as
        (its index, its count), or None; `used` counts the calls each has failed so far."""
        for i, f in enumerate(self.faults):
            if not isinstance(f, ApiErrors) or operation not in f.operations:
                continue
            if f.active(t) and used.get(i, 0) < f.count:
                return i, f.count
        return None
