"""The loop's context: the parts a decision is made with, handed to every graph node.

The graph state (agent.loop.state.Decision) is what is checkpointed; the context is what is not: the
backend, the policy, the planners, the decision log, the approval inbox, the last snapshot. A
snapshot is cached per decision only for the life of this process: after a restart a node that
needs it observes again, which is what a resumed decision should do anyway.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from agent.approvals.inbox import Inbox
from agent.audit import AuditLog
from agent.loop.deliberation import Deliberations
from agent.loop.findings import FindingsBook
from agent.planners.base import Planner
from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.rotation.runner import loop_rotator
from agent.signals.memory import Memory
from agent.signals.model import Signals
from agent.support.notices import LogNotifier, Notice, Notifier, notify_safely
from agent.support.telemetry import Telemetry
from policies.history import History
from policies.model import Policy
from tools.actions import RotateMode
from tools.backends.base import ActionResult, Cluster
from tools.backends.parts import Parts
from tools.clock import Clock
from tools.errors import TemporaryError
from tools.model import ClusterState

Rotator = Callable[[RotateMode, str], ActionResult]
"""Carries out a mode rotation for a decision id (the saga of tools/modes)."""

CRASH_ENV = "STEWARD_TEST_CRASH_AT"
"""Test hook: the graph node (or `act.mid`, after the first action) at which the process kills
itself with SIGKILL, to prove that a restart resumes or reconciles."""


OBSERVE_RETRY = Retrying(
    retry=retry_if_exception_type(TemporaryError),
    stop=stop_after_attempt(4),
    wait=wait_exponential(multiplier=0.05, max=1.0),
    reraise=True,
)
"""An observation that fails transiently (a 503, a timeout) is tried again, then given up on
for this tick: the runtime keeps the decision and resumes it on the next tick."""


@dataclass
class LoopContext:
    cluster: Cluster
    policy: Policy
    audit: AuditLog
    inbox: Inbox
    settings: RulesSettings
    planner: Planner
    fallback: RulesPlanner
    telemetry: Telemetry = field(default_factory=Telemetry)
    notifier: Notifier = field(default_factory=LogNotifier)
    """Where notices for people go: findings, waiting decisions, refusals, failures."""
    clock: Clock | None = None
    """The loop's clock (the daemon's `LoopClock`: waiting inside a decision suspends it); None:
    the cluster's own, as `Parts.of` finds it."""
    parts: Parts | None = None
    """The cluster's parts, when the composition root put it together (rotation uses them)."""
    rotate: Rotator | None = None
    """Carries out RotateMode; None: the saga of tools/modes (agent.rotation.runner.loop_rotator),
    journalled beside the decision log and mirrored into it."""
    persist: Callable[[], object] | None = None
    """Saves the backend's state after each executed action (the simulated cluster lives in
    the data dir; a real cluster keeps its own state and needs none)."""
    hold_denied: bool = True
    """Do not propose again, for a while, what the guard just denied (off for dry runs, which
    show every proposal with its verdict)."""
    track_findings: bool = True
    """Record findings as they appear and clear, and tell people (off for a dry run, which
    writes nothing but its plan)."""
    crash_at: str | None = field(default_factory=lambda: os.environ.get(CRASH_ENV) or None)
    planner_resting_until: datetime | None = None
    """Until when the chosen planner is not asked, after it failed (the rules decide)."""
    planner_failure: str = ""
    leading: Callable[[], bool] = lambda: True
    """Whether this replica leads now (agent.support.leadership): the model is asked only while
    it does — a replica that lost the lead mid-tick decides nothing, and spends no tokens."""
    memory: Memory = field(default_factory=Memory)
    """What the loop remembers between ticks. Assess, guard and record update it (loop-level
    soft state, not the decision's: it stays out of the checkpoints and is saved by the runtime
    to the data dir)."""
    _snapshots: dict[str, ClusterState] = field(default_factory=dict)
    _findings: FindingsBook | None = None

    deliberations: Deliberations | None = None
    """Where questions of judgment go when a model is configured (agent/loop/deliberation.py);
    None: the rules decide them inside the tick, as every routine decision."""

    held: frozenset[str] = frozenset()
    """Workloads and nodes a long action of an earlier decision still holds (a drain, a
    rotation in progress): this decision leaves them alone."""

    def __post_init__(self) -> None:
        if self.clock is None:
            self.clock = (self.parts or Parts.of(self.cluster)).clock
        if self.rotate is None:
            data_dir = self.audit.path.parent
            self.rotate = loop_rotator(
                self.cluster, data_dir, self.policy, self.audit, parts=self.parts, clock=self.clock
            )

    @property
    def loop_clock(self) -> Clock:
        assert self.clock is not None, "__post_init__ always sets a clock"
        return self.clock

    @property
    def data_dir(self) -> Path:
        """The data dir the decision log (and the pause switch) live in."""
        return self.audit.path.parent

    def observe(self, decision_id: str) -> ClusterState:
        """A fresh observation (retried on transient errors), remembered as this decision's."""
        state = OBSERVE_RETRY(self.cluster.observe)
        self._snapshots.clear()
        self._snapshots[decision_id] = state
        return state

    def snapshot(self, decision_id: str) -> ClusterState:
        """This decision's snapshot, or a fresh one after a restart."""
        state = self._snapshots.get(decision_id)
        return state if state is not None else self.observe(decision_id)

    def latest(self) -> ClusterState | None:
        """The last observation this process made, if any."""
        return next(iter(self._snapshots.values()), None)

    def forget(self, decision_id: str) -> None:
        self._snapshots.pop(decision_id, None)

    def let_go(self) -> None:
        """Drop the snapshots between decisions: freeing a 1,000-node observation parsed from
        JSON (some 300,000 objects) takes tens of ms, which the next decision need not wait
        for. A decision resumed later observes afresh, as after a restart."""
        self._snapshots.clear()

    def history(self, state: ClusterState, memory: Memory) -> History:
        """Executed actions of the recent past and when each pool was last busy."""
        return self.audit.history(
            state.observed_at, last_busy=memory.last_busy, watching_since=memory.watching_since
        )

    def recent_history(self) -> History:
        """What was done in the last day, as of the latest observation (for a planner's
        read-only look-ups; idleness is left out — it lives in the decision's signals)."""
        latest = self.latest()
        now = latest.observed_at if latest is not None else datetime.now(UTC)
        return self.audit.history(now)

    def track(self, state: ClusterState, signals: Signals) -> None:
        """Findings that appeared or cleared in this observation: logged, counted, told."""
        if not self.track_findings:
            return
        if self._findings is None:
            max_age = self.settings.assess.metric_max_age_s
            self._findings = FindingsBook(self.audit, self.telemetry, max_age)
        for notice in self._findings.update(state, signals):
            self.notify(notice)

    def notify(self, notice: Notice) -> None:
        """Tell people (never raises: a broken channel does not stop the decision)."""
        notify_safely(self.notifier, notice)

    def maybe_crash(self, point: str) -> None:
        """The kill -9 test hook: die here, without cleanup, if asked to."""
        if self.crash_at == point:
            os.kill(os.getpid(), signal.SIGKILL)
