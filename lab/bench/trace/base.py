"""The seam between a replay and a controller: what a controller sees and how it acts.

Every controller drives the same `SimCluster` through the `Cluster` protocol (`scale`), and reads
only what its real counterpart reads: `observe()` (the scraped queue depth, GPU utilization,
ready replicas), the gateway's `in_flight`, or a frontend's request counters (`World.arrivals`).
Only the static baseline (on its training split) and the bound's schedule come from
`World.timelines` — the load itself, known in advance; no adaptive controller reads it.

A controller family is one class; it keeps per-workload state itself (one ScaledObject, one HPA,
one Ray deployment per workload), is called every `interval_s` of simulated time, and its
`decide` is what is timed (`median_ms`, `p99_ms`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from lab.bench.trace.load import Timeline
from lab.bench.trace.record import Arrivals
from lab.sim.backend import SimCluster
from tools.backends.base import Cluster
from tools.model import ClusterState, Workload


@dataclass(frozen=True, slots=True)
class Target:
    """One driven workload: what its operator configured (bounds) and profiled (speeds)."""

    name: str
    pool: str
    cards_per_replica: int
    min_replicas: int
    """The lowest count its pool allows (0 where the pool may go to zero)."""
    max_replicas: int
    load_s: float
    prefill_tok_s: float
    decode_tok_s: float
    """Aggregate decode peak of one replica."""
    pool_size: int
    """Workloads sharing the pool's traffic (the router balances them)."""

    def service_s(self, input_tokens: float, output_tokens: float) -> float:
        """Seconds of one replica at full batch that these tokens take (its profiled speed)."""
        return input_tokens / self.prefill_tok_s + output_tokens / self.decode_tok_s


@dataclass(slots=True)
class World:
    """What a replay exposes to its controller."""

    cluster: Cluster
    targets: tuple[Target, ...]
    arrivals: dict[str, Arrivals]
    """Per pool: the frontend's cumulative request and token counters."""
    timelines: dict[str, Timeline]
    """Per pool: the expected demand, known in advance (static's training and the bound only)."""
    elapsed_s: float = 0.0
    jobs: bool = False
    """The load is render jobs (service seconds), not token requests."""


class Controller(Protocol):
    """A controller family driving every target of a replay."""

    name: str
    interval_s: float

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        """Replicas ready at the start (None: the replay's common start)."""
        ...

    def decide(self, world: World) -> None: ...

    def between(self) -> None:
        """Untimed chores after a decision (Steward's periodic save)."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Entry:
    """One controller configuration of a comparison: its name, its knob, how to build it."""

    name: str
    knob: str
    """e.g. `threshold=5` (empty for Steward: nothing of it is tuned)."""
    build: Callable[[SimCluster, Path], Controller]
    """Given the replay's cluster and a data dir of its own."""
    initial: Callable[[Target, Timeline, bool], int | None]


class Baseline(ABC):
    """Defaults shared by the re-implemented autoscalers."""

    name = "baseline"
    interval_s = 15.0

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        return None

    @abstractmethod
    def decide(self, world: World) -> None:
        """One control step over `world`: each family has its own."""

    def between(self) -> None:
        return None

    def close(self) -> None:
        return None


def workload(state: ClusterState, name: str) -> Workload:
    found = state.workload(name)
    if found is None:
        raise KeyError(f"the replay drives {name!r}, which the cluster does not have")
    return found


def queue_depth(w: Workload) -> float | None:
    """Requests waiting, a count (vLLM's num_requests_waiting as scraped); None if not fresh."""
    m = w.queue_depth
    return m.value if m.status == "fresh" and m.value is not None else None


def gpu_utilization_pct(state: ClusterState, w: Workload) -> float | None:
    """Mean scraped utilization of the cards the workload's ready replicas hold, in percent
    (0..100, as DCGM's `DCGM_FI_DEV_GPU_UTIL` and NVML report it and the snapshot exports it)."""
    cards = {g for r in w.placement if r.ready for g in r.gpus}
    values = [
        gpu.utilization.value
        for node in state.nodes
        for gpu in node.gpus
        if gpu.uuid in cards and gpu.utilization.status == "fresh"
        and gpu.utilization.value is not None
    ]  # fmt: skip
    return sum(values) / len(values) if values else None


def set_replicas(cluster: Cluster, target: Target, replicas: int, current: int) -> int:
    """Scale within the target's bounds; the count now wanted (unchanged if refused)."""
    replicas = max(target.min_replicas, min(target.max_replicas, replicas))
    if replicas == current:
        return current
    result = cluster.scale(target.name, replicas)
    return replicas if result.ok else current


def ceil_div(a: float, b: float) -> int:
    return math.ceil(a / b - 1e-9) if b > 0 else 0


def ongoing(world: World, target: Target, w: Workload) -> float:
    """Requests in the workload's hands, a count: the gateway's in flight plus the scraped queue
    (what Knative's and Ray Serve's routers count as concurrency)."""
    return world.cluster.in_flight(target.name) + (queue_depth(w) or 0.0)


@dataclass(slots=True)
class Samples:
    """Timed readings kept over a sliding window of `span_s` (what KPA and Serve average)."""

    span_s: float
    points: deque[tuple[float, float]] = field(default_factory=deque)

    def add(self, now: float, value: float) -> None:
        """Take a reading at `now` and forget those older than the window."""
        self.points.append((now, value))
        while self.points and self.points[0][0] < now - self.span_s:
            self.points.popleft()

    def mean(self, since: float) -> float:
        """The mean of the readings taken at `since` or later (0 with none)."""
        values = [v for t, v in self.points if t >= since]
        return sum(values) / len(values) if values else 0.0
