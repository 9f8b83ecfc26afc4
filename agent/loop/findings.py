"""Findings: what an observation shows that a person should hear of — once when it appears,
once when it clears, not once per tick.

assess reports notices every tick (agent/signals/faults.py); no planner action fixes a cable, so
they would be a line in every tick's signals and nothing more. Here each becomes a `Finding`
with a key stable across ticks, and the loop compares this tick's set with the open ones:

- shared_card: a card the scheduler counts twice (the seeds' MPS fault), per node;
- degraded_link / gid_changed: a link path below its nominal speed (or of unknown speed) / on
  another RoCE GID index than configured, per path;
- stale_metrics: a workload whose demand metrics, or a node whose card readings, are stale or
  missing;
- unschedulable: a replica with no node to run on (pending for want of room);
- context_below_fit: a served model configured with a shorter context than its card holds
  (the largest standard context that fits the model alone on that card model, from the
  placement catalogue);
- cordoned_capacity: a workload that wants a replica (requests queued and none running, or
  replicas with no node) where no node has room but a cordoned one would, per node, saying who
  cordoned it: a planner that cannot place for a cordon says so instead of going silent.

An appearance or a clearing gets one `finding` record in the decision log, a structlog line, the
`steward_findings{kind}` gauge and a notice. The open set is read back from the log at start, so
a restart neither repeats an appearance nor forgets a clearing.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from functools import lru_cache
from typing import get_args

import structlog
from pydantic import BaseModel, ConfigDict

from agent.audit import AuditLog, FindingChange, FindingKind
from agent.signals.model import Signals
from agent.support.notices import Notice
from agent.support.telemetry import Telemetry
from policies.activity import node_card_readings
from tools.model import ClusterState, Workload
from tools.placement import (
    default_catalog,
    max_tokens,
    pick_node,
    room_behind_cordons,
    standard_context,
)

KINDS: tuple[FindingKind, ...] = get_args(FindingKind)
log = structlog.get_logger("steward.findings")


class Finding(BaseModel):
    """One finding as of one observation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FindingKind
    key: str
    text: str


def findings_of(
    state: ClusterState, signals: Signals, max_age_s: float = 90.0
) -> dict[str, Finding]:
    """Every finding this observation shows, by key (`max_age_s`: when a reading is stale)."""
    found: list[Finding] = []
    for line in signals.shared_card_anomalies:
        host = line.split(":", 1)[0]
        found.append(Finding(kind="shared_card", key=f"shared_card:{host}", text=line))
    for link in signals.degraded_links:
        where = f"{link.link}/{link.path}"
        gid = link.gid_index
        expected = link.expected_gid_index
        if gid is not None and expected is not None and int(gid) != expected:
            text = f"{where}: GID index {int(gid)} where {expected} is configured"
            found.append(Finding(kind="gid_changed", key=f"gid_changed:{where}", text=text))
        others = [p for p in link.problem.split("; ") if not p.startswith("GID index")]
        if others:
            text = f"{where}: {'; '.join(others)}"
            found.append(Finding(kind="degraded_link", key=f"degraded_link:{where}", text=text))
    for entry in signals.stale_metrics:
        name = entry.split("/", 1)[0]
        text = f"{name}: demand metrics stale or missing ({entry})"
        found.append(Finding(kind="stale_metrics", key=f"stale_metrics:{name}", text=text))
    # The card readings policies.activity holds a pool on.
    too_old = state.observed_at - timedelta(seconds=max_age_s)
    for node in state.nodes:
        unread, oldest = node_card_readings(node)
        if unread or (oldest is not None and oldest < too_old):
            found.append(_node_stale(node.name))
    for workload in state.workloads:
        found += _workload_findings(workload, state)
    if any(n.cordoned for n in state.nodes):  # a cluster without cordons pays nothing here
        found += _cordoned_capacity(state, signals)
    return {f.key: f for f in found}


def _cordoned_capacity(state: ClusterState, signals: Signals) -> list[Finding]:
    """Per cordoned node, the workloads that want a replica and find room only there."""
    queued = {s.workload: s.queue_depth or 0.0 for s in signals.workloads}
    held: dict[str, list[str]] = {}
    cordoned_by: dict[str, str] = {}
    for workload in state.workloads:
        pending = sum(1 for r in workload.placement if not r.nodes)
        if not pending and not (workload.ready_replicas == 0 and queued.get(workload.name, 0) > 0):
            continue
        if pick_node(workload, state, limit=1):
            continue  # room elsewhere: no cordon stands in the way
        for node in room_behind_cordons(workload, state):
            held.setdefault(node.name, []).append(workload.name)
            cordoned_by[node.name] = "Steward" if node.cordoned_by_steward else "a person"
    return [
        Finding(
            kind="cordoned_capacity",
            key=f"cordoned_capacity:{node}",
            text=f"{node}: cordoned by {cordoned_by[node]}, and {', '.join(names)} find(s) room "
            "there and nowhere else"
            + (
                "; lifting a person's cordon needs a person (kubectl uncordon, or approve "
                f"uncordon {node})"
                if cordoned_by[node] == "a person"
                else "; Steward lifts its own cordon when its planner needs the room"
            ),
        )
        for node, names in sorted(held.items())
    ]


@lru_cache(maxsize=65536)
def _node_stale(node: str) -> Finding:
    """The finding of a node whose card readings are stale or missing: the same one tick after
    tick (a fleet without a metric source has 1,000 of them), so made once per node name."""
    text = f"{node}: card readings stale or missing"
    return Finding(kind="stale_metrics", key=f"stale_metrics:{node}", text=text)


def _workload_findings(workload: Workload, state: ClusterState) -> list[Finding]:
    found: list[Finding] = []
    waiting = [r for r in workload.placement if not r.nodes]
    if waiting:
        found.append(
            Finding(
                kind="unschedulable",
                key=f"unschedulable:{workload.name}",
                text=f"{workload.name}: {len(waiting)} of {workload.desired_replicas} replica(s) "
                "have no node to run on",
            )
        )
    if workload.model is None or workload.context_length is None:
        return found
    placed = next((r for r in workload.placement if r.nodes and r.ready), None)
    if placed is None:
        return found
    node = state.node(placed.nodes[0])
    card = next((g for g in node.gpus if g.uuid in placed.gpus), None) if node else None
    card = card or (node.gpus[0] if node is not None and node.gpus else None)
    if card is None:
        return found
    largest = _largest_context(workload.model, card.model, max(1, workload.cards_per_replica))
    if largest is not None and largest > workload.context_length:
        found.append(
            Finding(
                kind="context_below_fit",
                # The configured context is in the key: told once, and again when it changes.
                key=f"context_below_fit:{workload.name}:{workload.context_length}",
                text=f"{workload.name}: {workload.model} is set to {workload.context_length:,} "
                f"tokens of context; {_fitting(workload.context_length, largest)} fit on "
                f"{card.model} (an advisory: Steward changes no context by itself)",
            )
        )
    return found


def _fitting(configured: int, largest: int) -> str:
    """The standard contexts above `configured` that fit, the two largest named: "262,144 and
    524,288" (or the largest alone)."""
    sizes = [largest]
    step = largest // 2
    while step > configured and len(sizes) < 2 and step & (step - 1) == 0:
        sizes.insert(0, step)
        step //= 2
    return " and ".join(f"{n:,}" for n in sizes)


@lru_cache(maxsize=256)
def _largest_context(model: str, card_model: str, tensor_parallel: int) -> int | None:
    """The largest standard context of `model` alone on `card_model` cards (None: unknown)."""
    catalog = default_catalog()
    spec = catalog.models.get(model)
    card = catalog.gpus.get(card_model)
    if spec is None or card is None:
        return None
    available = round(card.memory_gib * 1024**3)
    if card.unified_memory:
        available -= catalog.unified_os_reserve_bytes
    tokens = max_tokens(spec, catalog, available, tensor_parallel=tensor_parallel)
    return standard_context(tokens, spec.max_context) or None


def open_findings(audit: AuditLog) -> dict[str, FindingChange]:
    """The findings the log says are open: appeared, not cleared since."""
    latest: dict[str, FindingChange] = {}
    for record in audit.records(kind="finding"):
        if isinstance(record.payload, FindingChange):
            latest[record.payload.key] = record.payload
    return {key: f for key, f in latest.items() if f.status == "appeared"}


class FindingsBook:
    """The open findings of one loop, and what to do when the set changes."""

    def __init__(self, audit: AuditLog, telemetry: Telemetry, max_age_s: float = 90.0) -> None:
        self.audit = audit
        self.telemetry = telemetry
        self.max_age_s = max_age_s
        self.open: dict[str, FindingChange] = open_findings(audit)
        self._gauge()

    def update(self, state: ClusterState, signals: Signals) -> list[Notice]:
        """Record what appeared and cleared in this observation; the notices to send."""
        now = findings_of(state, signals, self.max_age_s)
        at = state.observed_at
        changes = [
            FindingChange(finding=f.kind, observed_at=at, key=f.key, status="appeared", text=f.text)
            for key, f in now.items()
            if key not in self.open
        ]
        changes += [
            FindingChange(finding=f.finding, observed_at=at, key=key, status="cleared", text=f.text)
            for key, f in self.open.items()
            if key not in now
        ]
        if not changes:
            return []
        self.audit.append_batch(changes)
        notices = []
        for change in changes:
            if change.status == "appeared":
                self.open[change.key] = change
            else:
                self.open.pop(change.key, None)
            # info, not warning: a finding is news, not an error of the agent's (and commands
            # that print JSON filter their log to warnings).
            log.info(
                f"finding {change.status}",
                kind=change.finding,
                key=change.key,
                text=change.text,
                at=at.isoformat(),
            )
            notices.append(
                Notice(
                    kind="finding_appeared" if change.status == "appeared" else "finding_cleared",
                    text=f"{change.finding} {change.status}: {change.text}",
                    at=at,
                    details={"finding": change.finding, "key": change.key},
                )
            )
        self._gauge()
        return notices

    def _gauge(self) -> None:
        counts = Counter(f.finding for f in self.open.values())
        for kind in KINDS:
            self.telemetry.findings.labels(kind=kind).set(counts.get(kind, 0))
