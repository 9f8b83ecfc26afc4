"""Running one case: the embedded simulated cluster, the real agent loop, and what it did.

Each case runs in its own data dir, through `agent.daemon.runtime.Runtime` as `steward run`
does: ticks of `tick_s` until `duration_s`, the policy guarding every action, approvals left
waiting (nobody answers in an eval). The past actions of `history:` are written into the
decision log first, as executed actions before the start, so cooldowns and the change budget
see them. What comes back is evidence only: the executed actions (from the decision log), the
findings and notices per tick, the pending approvals, the end state and the series.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from agent.audit import AuditLog, new_decision_id
from agent.audit.records import ActionOutcome, FindingChange, Intent, Outcome, Proposal
from agent.daemon.runtime import Runtime
from agent.planners.base import Planner, PlannerReport
from agent.signals.assess import assess
from lab.scorecard.cases import Case
from lab.sim.backend import SimCluster
from lab.sim.expect import PastAction
from lab.sim.series import SimSeries
from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)
from tools.model import ClusterState

HISTORY_DIGEST = "0" * 64
"""The observation digest of a preloaded past decision: nothing was observed in this run."""


@dataclass(frozen=True)
class Done:
    """One action the backend carried out, `at_s` seconds after the start."""

    at_s: float
    action: Action
    ok: bool


@dataclass(frozen=True)
class Seen:
    """A finding or notice, what it is about, and when it was first seen."""

    kind: str
    about: str
    at_s: float


@dataclass
class CaseRun:
    """What happened in one case (evidence for the scorer)."""

    executed: list[Done]
    seen: list[Seen]
    pending: list[Action]
    end: ClusterState
    series: SimSeries
    ticks: int
    wall_s: float
    decisions: list[PlannerReport] = field(default_factory=list)
    decision_s: list[float] = field(default_factory=list)
    """Wall time of each tick that called a planner."""
    fallbacks: int = 0
    deliberated: dict[str, int] = field(default_factory=dict)
    """Questions the model deliberated, by what became of its answer (planned, fallback,
    superseded)."""
    error: str | None = None
    levels: dict[str, list[tuple[float, int, int]]] = field(default_factory=dict)
    """Per workload: (seconds, desired, ready) each time either changed, from t = 0."""


def run_case(case: Case, data_dir: Path, planner: Planner | None = None) -> CaseRun:
    """Run `case` in a fresh `data_dir` with `planner` (None: the rules planner)."""
    started = time.perf_counter()
    scenario = case.scenario
    sim = SimCluster.open(data_dir, scenario)
    start = sim.now
    if scenario.history:
        preload(data_dir, start, scenario.history)
    runtime = Runtime.open(data_dir, sim, case.policy, planner=planner)
    deliberations = runtime.ctx.deliberations
    if deliberations is not None:
        deliberations.wait = True  # the simulated world waits for the model: reproducible
    asked = deliberations.model if deliberations is not None else runtime.ctx.planner
    seen: dict[tuple[str, str], Seen] = {}
    levels: dict[str, list[tuple[float, int, int]]] = {}
    _level(levels, sim.observe(), 0.0)
    decisions: list[PlannerReport] = []
    decision_s: list[float] = []
    last_report: object = None
    ticks = 0
    error: str | None = None
    try:
        runtime.start()
        while sim.elapsed_s + 1e-9 < scenario.duration_s:
            report = runtime.tick(min(scenario.tick_s, scenario.duration_s - sim.elapsed_s))
            ticks += 1
            at_s = sim.elapsed_s
            for finding in report.findings:
                _see(seen, "finding", _about(finding), at_s)
            _level(levels, _notices(seen, runtime, sim.observe(), case, at_s), at_s)
            used = getattr(asked, "last_report", None)
            if isinstance(used, PlannerReport) and used is not last_report:
                decisions.append(used)
                decision_s.append(report.seconds)
                last_report = used
        executed = [
            Done(at_s=(e.at - start).total_seconds(), action=e.action, ok=e.ok)
            for e in runtime.ctx.audit.executed_actions(start)
        ]
        for record in runtime.ctx.audit.records(kind="finding"):
            change = record.payload
            if isinstance(change, FindingChange) and change.status == "appeared":
                at = (change.observed_at - start).total_seconds()
                _see(seen, change.finding, _about(change.text), at)
        pending = [a for p in runtime.ctx.inbox.listed("waiting") for a in p.actions]
        fallbacks = len(runtime.ctx.audit.records(kind="fallback"))
        deliberated: dict[str, int] = {}
        for record in runtime.ctx.audit.records(kind="deliberation"):
            outcome = getattr(record.payload, "outcome", "?")
            deliberated[outcome] = deliberated.get(outcome, 0) + 1
        end = sim.observe()
    finally:
        runtime.close()
    return CaseRun(
        executed=executed,
        seen=sorted(seen.values(), key=lambda s: s.at_s),
        pending=pending,
        end=end,
        series=sim.series(),
        ticks=ticks,
        wall_s=time.perf_counter() - started,
        decisions=decisions,
        decision_s=decision_s,
        fallbacks=fallbacks,
        deliberated=deliberated,
        error=error,
        levels=levels,
    )


def _level(
    levels: dict[str, list[tuple[float, int, int]]], state: ClusterState, at_s: float
) -> None:
    for w in state.workloads:
        seen = levels.setdefault(w.name, [])
        now = (w.desired_replicas, w.ready_replicas)
        if not seen or seen[-1][1:] != now:
            seen.append((at_s, *now))


def _about(finding: str) -> str:
    """What a finding sentence is about: the workload before its colon, or the mode."""
    if finding.startswith("demand has favoured mode "):
        return "mode"
    return finding.split(":", 1)[0]


def _see(seen: dict[tuple[str, str], Seen], kind: str, about: str, at_s: float) -> None:
    seen.setdefault((kind, about), Seen(kind=kind, about=about, at_s=at_s))


def _notices(
    seen: dict[tuple[str, str], Seen],
    runtime: Runtime,
    state: ClusterState,
    case: Case,
    at_s: float,
) -> ClusterState:
    """The tick's notices in `state`, from the same pure assess the loop runs (its memory is
    not kept); returns the observation."""
    signals, _ = assess(state, runtime.memory, runtime.ctx.settings.assess, case.policy)
    for stale in signals.stale_metrics:
        _see(seen, "stale_metrics", stale.split("/", 1)[0], at_s)
    for link in signals.degraded_links:
        _see(seen, "degraded_link", link.link, at_s)
    for anomaly in signals.shared_card_anomalies:
        _see(seen, "shared_card_anomaly", anomaly.split(":", 1)[0], at_s)
    return state


def past_action(past: PastAction) -> Action:
    why = f"executed {past.ago_s:g} s before the case began (history)"
    if past.type == "scale_workload":
        return ScaleWorkload(workload=past.target, replicas=past.replicas or 0, reason=why)
    if past.type == "place_replica":
        return PlaceReplica(workload=past.target, node=past.node or "", reason=why)
    if past.type == "cordon_node":
        return CordonNode(node=past.target, reason=why)
    if past.type == "uncordon_node":
        return UncordonNode(node=past.target, reason=why)
    if past.type == "drain_node":
        return DrainNode(node=past.target, reason=why)
    return RotateMode(target_mode=past.target, reason=why)


def preload(data_dir: Path, start: datetime, history: tuple[PastAction, ...]) -> None:
    """Write each past action into the decision log as a decision executed before `start`."""
    now = [start]
    log = AuditLog.open(data_dir, clock=lambda: now[0])
    try:
        for past in sorted(history, key=lambda p: -p.ago_s):
            at = start - timedelta(seconds=past.ago_s)
            now[0] = at
            decision = new_decision_id()
            action = past_action(past)
            log.write_intent(
                Intent(
                    decision_id=decision,
                    observed_at=at,
                    observation_digest=HISTORY_DIGEST,
                    planner="history",
                    rationale="preloaded by the eval case",
                    proposals=(Proposal(action=action, verdict="allow"),),
                )
            )
            log.write_outcome(
                Outcome(
                    decision_id=decision,
                    results=(ActionOutcome(index=0, executed=True, ok=True, changed=True),),
                )
            )
    finally:
        log.close()
