"""The simulator's mutable state, in plain dataclasses (fast to step, easy to persist).

Nothing here is a pydantic model: a tick touches thousands of these objects, and the typed,
frozen world model (tools.model) is built from them only when someone observes, with structural
sharing (lab.sim.snapshot). The store (lab.sim.store) writes this state as JSON.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from lab.sim.demand import Request
from lab.sim.serving import Server, Window

Phase = Literal["pending", "starting", "ready", "unreachable", "terminating"]
"""pending: not placed; starting: loading the model; ready: serving; unreachable: its node is
lost (evicted after `EVICTION_S`); terminating: draining in-flight work, then exiting."""

EVICTION_S = 300.0
"""Kubernetes' default toleration of an unreachable node before its pods are evicted."""

SCALE_DOWN_GRACE_S = 120.0
"""How long a replica removed by scale-down may finish in-flight requests (terminationGrace)."""


@dataclass(slots=True)
class Replica:
    workload: str
    index: int
    phase: Phase = "pending"
    nodes: list[str] = field(default_factory=list)
    cards: list[str] = field(default_factory=list)
    since_s: float = 0.0
    """When the current phase began."""
    ready_at_s: float = 0.0
    """starting: when it becomes ready. terminating: when it exits once idle (exit delay)."""
    deadline_s: float = 0.0
    """terminating: in-flight work still running then is aborted. unreachable: eviction."""
    server: Server = field(default_factory=Server)
    """The replica's engine: its queue, running requests and busy time (lab.sim.serving); a
    render replica's job (lab.sim.jobs); a batch worker's busy time. Ready replicas alike may
    share one (lab.sim.router)."""
    busy_offset: float = 0.0
    """The replica's busy seconds are its engine's less this (an engine shared since)."""

    @property
    def client(self) -> str:
        return f"{self.workload}/{self.index}"

    @property
    def holds_memory(self) -> bool:
        return bool(self.nodes)


@dataclass(slots=True)
class WorkloadRun:
    """The moving parts of one workload."""

    desired: int = 0
    ready: int = 0
    """Replicas in phase ready (kept by lifecycle.recount after every change of phase)."""
    accepting: bool = True
    """The gateway sends this workload's replicas new requests (closed: they wait in its queue)."""
    next_index: int = 0
    replicas: list[Replica] = field(default_factory=list)
    queue: deque[Request] = field(default_factory=deque)
    """At the gateway: requests no ready replica was there to take (or the gateway is closed);
    a render workload's job queue. Requests routed to a replica wait in its own queue."""
    scrape: Window = field(default_factory=Window)
    series: Window = field(default_factory=Window)
    tokens_total: float = 0.0
    sample: (
        tuple[
            float,
            float,
            float | None,
            float | None,
            float | None,
            float | None,
            float | None,
            float | None,
            float | None,
            float | None,
            float | None,
            float | None,
        ]
        | None
    ) = None
    """The last scrape: t, queue depth, wait, tokens/s, TTFT p90, requests running, longest
    request refused for its context in the last REFUSALS_KEEP_S, longest request queued or
    running, KV-cache usage of the fullest replica (0..1), inter-token latency p90, prompt
    tokens/s, requests finished per second."""
    refusals: list[tuple[float, int]] = field(default_factory=list)
    """Scrape times with the longest request refused for its context since the one before."""
    last_scrape_s: float = 0.0
    last_busy: dict[str, float] = field(default_factory=dict)
    """Series: each replica's busy seconds at the last series point."""
    last_series_s: float = 0.0


@dataclass(slots=True)
class CardSample:
    t: float
    utilization: float
    memory_used: int
    power_w: float


@dataclass(slots=True)
class NodeRun:
    cordoned: bool = False
    cordoned_by_steward: bool = False
    """The cordon is Steward's own (tools.model.Node.cordoned_by_steward)."""
    lost: bool = False
    memory_sample: tuple[float, int] | None = None
    """Last scrape of the node's memory used: (t, bytes)."""
    cards: dict[str, CardSample] = field(default_factory=dict)
    """Last scrape of each card, by UUID."""
    last_busy: dict[str, float] = field(default_factory=dict)
    """Per client replica: busy seconds at the last scrape (utilization is their difference)."""
    last_scrape_s: float = 0.0


@dataclass(slots=True)
class SeriesRow:
    t: float
    workload: str
    queue_depth: int
    queue_wait_s: float | None
    ttft_s: float | None
    utilization: float
    tokens_per_s: float
    tokens_total: float
    stream_tok_s: float | None
    ready_replicas: int
    completed: int
    rejected: int
    aborted: int


@dataclass(slots=True)
class GeneratorState:
    next_s: float
    cursor: int
    primed: bool
    rng: list[object]


@dataclass(slots=True)
class SimState:
    t: float = 0.0
    ticks: int = 0
    workloads: dict[str, WorkloadRun] = field(default_factory=dict)
    nodes: dict[str, NodeRun] = field(default_factory=dict)
    link_samples: dict[str, tuple[float, float, int]] = field(default_factory=dict)
    """Per `link/path`: last scrape (t, negotiated Gb/s, GID index)."""
    api_errors_used: dict[int, int] = field(default_factory=dict)
    """Per api_errors fault (its index): calls failed so far."""
    series: list[SeriesRow] = field(default_factory=list)
    next_series_s: float = 0.0


def card_uuid(node: str, index: int) -> str:
    """A stable, UUID-shaped card id (the form NVML reports), derived from node and index."""
    h = hashlib.sha1(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
