"""What assess makes of one observation: `Signals`, read by the loop and by every planner.

It sits below both (the loop runs assess and hands its signals to a planner; a planner reads
them), so `Planner.plan` takes it typed without importing the loop. Per workload, demand and
supply as assess reads them (`WorkloadSignals`) with the capacity model's view of it
(`SloView`); per link, what is wrong with it (`LinkSignal`).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, JsonValue

from agent.capacity.forecast import Forecast
from tools.model import WorkloadKind


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SloView(_Model):
    """What the capacity model makes of one profiled workload against its pool's SLO: the
    replicas it needs and why, what the reactive layer saw, and whether one fewer (or zero)
    pays. Built by assess (agent.signals.slo), read by the rules planner."""

    need: int
    """Replicas the sizing asks for (agent.capacity.sizing), the reactive layer's deficit
    included."""
    sized: int
    """What the forecast and the queueing rule alone ask for."""
    terms: dict[str, int] = {}
    deciding: str = ""
    words: str = ""
    """The forecast, the capacity model and the sizing terms, in plain words."""
    forecast: Forecast | None = None
    reactive: str = ""
    """Why the reactive layer added replicas now ("" when it did not)."""
    release_to: int | None = None
    """Replicas to keep when one fewer (or more) has been unneeded for the keep time."""
    keep_s: float = 0.0
    release_after_s: float = 0.0
    """How long the asks must stay below the replicas running before one fewer: the keep time,
    or longer than the workload's usual dip (agent.capacity.release.release_after)."""
    quiet_for_s: float | None = None
    """Seconds since work was last seen."""
    zero_after_s: float = 0.0
    """No arrival for this long before zero: the keep time or the usual idle gap, if longer."""
    drift: str = ""
    """A capacity profile that no longer describes the replicas (beyond +-25 %): said on the
    tick the drift is first seen."""
    drifting: bool = False
    """The drift goes on (told already or now): the premise of its question to the model."""

    def line(self) -> str:
        return self.words + (f"; reactive: {self.reactive}" if self.reactive else "")


class WorkloadSignals(_Model):
    """Demand and supply of one workload as assess reads them. None means not usable."""

    workload: str
    pool: str
    kind: WorkloadKind
    desired_replicas: int
    ready_replicas: int
    queue_depth: float | None = None
    queue_wait_s: float | None = None
    tokens_per_s: float | None = None
    slo_wait_s: float | None = None
    demand_trend: float | None = None
    """Queue depth change per minute over the recent samples (positive: growing)."""
    idle_for_s: float | None = None
    """Seconds without queued demand (None: there is demand now, or it was never seen)."""
    calm_for_s: float | None = None
    """Seconds the queue wait has stayed below the scale-down watermark."""
    stale: bool = False
    """A demand metric is stale or missing: the planner holds this workload as it is."""
    slo: SloView | None = None
    """The capacity model's view, for a workload with a profile under a TTFT target."""

    def line(self) -> str:
        """One readable line: replicas, queue, wait against the SLO, trend, idleness."""
        parts = [f"{self.ready_replicas}/{self.desired_replicas} ready"]
        if self.stale:
            parts.append("demand metrics stale or missing")
        if self.queue_depth is not None:
            parts.append(f"queue {self.queue_depth:g}")
        if self.queue_wait_s is not None:
            parts.append(f"wait {self.queue_wait_s:.1f} s (SLO {self.slo_wait_s:g} s)")
        if self.demand_trend is not None:
            parts.append(f"trend {self.demand_trend:+.1f}/min")
        if self.idle_for_s:
            parts.append(f"idle {self.idle_for_s:.0f} s")
        if self.calm_for_s:
            parts.append(f"calm {self.calm_for_s:.0f} s")
        if self.slo is not None:
            parts.append(self.slo.line())
        return ", ".join(parts)

    @property
    def wait_ratio(self) -> float | None:
        if self.queue_wait_s is None or not self.slo_wait_s:
            return None
        return self.queue_wait_s / self.slo_wait_s


class LinkSignal(_Model):
    link: str
    path: str
    fraction_of_nominal: float | None
    gid_index: float | None
    expected_gid_index: int | None
    problem: str


class Signals(_Model):
    """Everything assess found in one observation; `findings` says what needs deciding."""

    observed_at: datetime
    workloads: tuple[WorkloadSignals, ...] = ()
    idle_cards: int = 0
    shared_card_anomalies: tuple[str, ...] = ()
    degraded_links: tuple[LinkSignal, ...] = ()
    stale_metrics: tuple[str, ...] = ()
    held_pools: tuple[str, ...] = ()
    """Pools whose running workloads have stale or missing readings: nothing of theirs is
    scaled down (or to zero) until the readings are fresh again; a finding says so."""
    active_mode: str | None = None
    favoured_mode: str | None = None
    """The other mode, when demand has favoured it for long enough (see assess)."""
    favoured_because: str = ""
    findings: tuple[str, ...] = ()

    @property
    def needs_decision(self) -> bool:
        return bool(self.findings)

    def workload(self, name: str) -> WorkloadSignals | None:
        return next((w for w in self.workloads if w.workload == name), None)

    def for_log(self, targets: set[str]) -> dict[str, JsonValue]:
        """A compact, readable form for the decision log: findings, notices, and one line per
        workload the decision is about (the full per-workload table stays out of the log)."""
        lines: dict[str, JsonValue] = {
            w.workload: w.line() for w in self.workloads if w.workload in targets
        }
        return {
            "findings": list(self.findings),
            "active_mode": self.active_mode,
            "favoured_mode": self.favoured_mode,
            "idle_cards": self.idle_cards,
            "shared_card_anomalies": list(self.shared_card_anomalies),
            "degraded_links": [
                f"{link.link}/{link.path}: {link.problem}" for link in self.degraded_links
            ],
            "stale_metrics": list(self.stale_metrics),
            "workloads": lines,
        }
