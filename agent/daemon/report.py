"""What a tick did and what a run did: the reports the daemon gives its CLI, logs and tests.

A `TickReport` says what one tick decided, carried out and left waiting; a `RunSummary` adds
them up over a run, keeping the last actions carried out (RAN_KEPT) for the summary people read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from agent.loop.state import Decision


@dataclass(frozen=True)
class TickReport:
    """What one tick did (for logs, tests and the CLI)."""

    tick: int
    decision_id: str
    at: str
    decided: bool
    waiting: bool
    actions: tuple[str, ...]
    verdicts: tuple[str, ...]
    executed: int
    resumed: tuple[str, ...]
    findings: tuple[str, ...]
    seconds: float
    in_progress: tuple[str, ...] = ()
    """Decisions whose long action (a drain, a rotation) is still going on after this tick."""
    standby: bool = False
    """This replica did not lead: it observed and decided nothing."""
    ran: tuple[str, ...] = ()
    """Actions carried out during this tick, by any decision — this tick's, an approved one
    resumed, a long one that ended — each once, as `<time> <action>`."""
    fallback: str | None = None
    """Why the rules planner decided instead of the chosen one (None: the chosen one did)."""


@dataclass
class RunSummary:
    """What a run's ticks did, summed up as they went."""

    ticks: int = 0
    decisions: int = 0
    executed: int = 0
    waiting: list[str] = dataclasses.field(default_factory=list)
    """Decisions that stopped to wait for a human during this run."""
    ran: list[str] = dataclasses.field(default_factory=list)
    """The last actions carried out (at most RAN_KEPT), newest last."""
    resumed: int = 0
    standby_ticks: int = 0
    in_progress: tuple[str, ...] = ()
    first_at: str = ""
    last_at: str = ""
    fallbacks: int = 0
    """Ticks the rules planner decided because the chosen planner failed or was resting."""
    fallback_reason: str = ""
    """The latest reason of a fallback."""

    def add(self, report: TickReport) -> None:
        if report.fallback is not None:
            self.fallbacks += 1
            self.fallback_reason = report.fallback
        self.ticks += 1
        self.decisions += int(report.decided)
        self.executed += len(report.ran)
        self.resumed += len(report.resumed)
        self.standby_ticks += int(report.standby)
        if report.waiting:
            self.waiting.append(report.decision_id)
        if report.ran:
            self.ran = (self.ran + list(report.ran))[-RAN_KEPT:]
        self.first_at = self.first_at or report.at
        self.last_at = report.at or self.last_at


RAN_KEPT = 20


def report_of(
    tick: int, d: Decision, waiting: bool, resumed: tuple[str, ...], seconds: float
) -> TickReport:
    """The tick's report of decision `d` (`seconds`: filled in by the caller once timed)."""
    return TickReport(
        tick=tick,
        decision_id=d.decision_id,
        at=d.observed_at.isoformat() if d.observed_at else "",
        decided=d.plan is not None and bool(d.plan.actions),
        waiting=waiting,
        actions=tuple(v.action.describe() for v in d.verdicts),
        verdicts=tuple(v.decision for v in d.verdicts),
        executed=sum(1 for o in d.outcomes if o.executed and o.ok),
        resumed=resumed,
        findings=d.signals.findings if d.signals else (),
        seconds=round(seconds, 4),
        fallback=d.fallback_reason,
    )


def standby_report(tick: int, at: str, seconds: float) -> TickReport:
    """The report of a tick this replica only observed (it did not lead)."""
    return TickReport(
        tick=tick,
        decision_id="",
        at=at,
        decided=False,
        waiting=False,
        actions=(),
        verdicts=(),
        executed=0,
        resumed=(),
        findings=(),
        seconds=round(seconds, 4),
        standby=True,
    )


def log_fields(report: TickReport, d: Decision) -> dict[str, object]:
    """The fields of the `decision` log line (each action with its verdict and rules)."""
    return {
        "tick": report.tick,
        "decision": report.decision_id,
        "at": report.at,
        "actions": [
            f"{v.action.describe()} [{v.decision}: {', '.join(v.rule_ids)}]" for v in d.verdicts
        ],
        "executed": report.executed,
        "waiting": report.waiting,
        "fallback": d.fallback_reason,
        "resumed": list(report.resumed),
    }
