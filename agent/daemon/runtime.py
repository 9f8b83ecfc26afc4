"""The daemon: one writer per data dir, ticks on a virtual or real clock, clean stops.

`Runtime.open` takes the data dir's lock (two daemons never both write) and puts the loop
together over the cluster's parts (tools/backends/parts.py: whatever backend the composition
root chose), the policy, the decision log, the approval inbox and the checkpoints. `start()`
finishes what a previous process left: graph threads killed mid-way are resumed (act reconciles
instead of running anything twice), intents without a thread are closed as interrupted.

Each `tick()` lets the interval pass (a simulated world is advanced by it; a real one moves by
itself), goes on with long actions whose wait is over, resumes decisions a human has answered,
then runs one new decision through the graph (agent/daemon/threads.py: a drain or a rotation
that waits suspends its decision instead of holding the loop, so ticks keep their interval and
/healthz stays 200). SIGTERM and SIGINT let the current step finish; then the log is closed and
the cluster's state saved.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog
from langgraph.types import Command

from agent import __version__
from agent.approvals.asked import take_handed
from agent.approvals.inbox import Inbox
from agent.approvals.rebuild import settle_inbox
from agent.audit import AuditLog, Startup, new_decision_id
from agent.daemon.announce import Announcer
from agent.daemon.answers import expire_due, resume_answer
from agent.daemon.catchup import catch_up
from agent.daemon.head_publisher import HeadPublisher, HeadStamped
from agent.daemon.report import RunSummary, TickReport, log_fields, report_of, standby_report
from agent.daemon.threads import DecisionThreads, config, decision_of
from agent.loop.context import LoopContext, Rotator
from agent.loop.deliberation import Deliberations
from agent.loop.graph import Graph, build_graph, open_checkpointer, settle_checkpoints
from agent.loop.nodes import restart_mode_dwell
from agent.loop.state import Decision, SplitPart
from agent.planners.base import Deliberator, Planner, ReadsDecisionLog, ReadsHistory
from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.rotation.runner import open_rotation
from agent.signals.memory import Memory, read_tick_and_memory, write_memory
from agent.signals.settings import AssessSettings
from agent.support import lockfile, pause
from agent.support.datadir import take_lock
from agent.support.leadership import Leadership, Sole
from agent.support.notices import LogNotifier, Notifier
from agent.support.telemetry import Telemetry
from policies.model import Policy
from tools.actions import RotateMode
from tools.backends.base import Cluster
from tools.backends.parts import Parts
from tools.clock import LoopClock
from tools.errors import TemporaryError

VERSION = __version__
SAVE_EVERY_S = 1.0
"""Between decisions the simulated cluster and the loop's memory are saved at most this often
(and always at the end): what `steward status` shows of a running agent lags by up to this."""

log = structlog.get_logger("steward.loop")


class Runtime:
    """One loop over one data dir: `open`, then `start()`, `tick()` or `run()`, `close()`."""

    def __init__(
        self, data_dir: Path, parts: Parts, ctx: LoopContext, graph: Graph, lock_fd: int
    ) -> None:
        self.data_dir = data_dir
        self.parts = parts
        self.world = parts.orchestrator
        """The backend itself (tests reach the simulator's fault injection through it)."""
        self.clock = ctx.loop_clock
        self.ctx = ctx
        self.graph = graph
        self._lock_fd = lock_fd
        self.tick_no, ctx.memory = read_tick_and_memory(data_dir)
        self.stop = threading.Event()
        self._saved_at = time.monotonic()
        self._memory_due = False
        """A decision changed the memory since it was last written (housekeep writes it)."""
        self.deliberation_fallback: str | None = None
        """The latest deliberation that fell back since the last tick (its summary counts it)."""
        self.head_publisher = HeadPublisher(ctx.audit.outside_head, None)
        self.threads = DecisionThreads(graph, self.clock, ctx.latest)
        """The decisions' graph threads, those in a long action among them."""
        self.leadership: Leadership = Sole()
        self.chores: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        """Work other threads hand to the tick thread (a rotation asked for in Slack): run
        before the next decision, so the daemon stays the one writer of cluster and log."""
        self.announcer = Announcer(lambda: self.notifier)

    @property
    def notifier(self) -> Notifier:
        """Where notices go: the loop's and the daemon's alike (a chat channel replaces it)."""
        return self.ctx.notifier

    @notifier.setter
    def notifier(self, value: Notifier) -> None:
        self.ctx.notifier = value

    @classmethod
    def open(
        cls,
        data_dir: Path,
        cluster: Cluster | Parts,
        policy: Policy,
        *,
        planner: Planner | None = None,
        rotate: Rotator | None = None,
        telemetry: Telemetry | None = None,
        leadership: Leadership | None = None,
        notifier: Notifier | None = None,
        thresholds: AssessSettings | None = None,
        witness: str | None = None,
    ) -> Runtime:
        """`thresholds`: those of assess that steward.yaml sets (compose.assess_settings); the
        policy gives the per-pool ones. `witness`: steward.yaml's audit.witness, the file or
        URL the log's head is published to (agent.daemon.head_publisher)."""
        parts = cluster if isinstance(cluster, Parts) else Parts.of(cluster)
        leadership = leadership or Sole()
        fence = None if isinstance(leadership, Sole) else leadership.leading
        lock_fd = take_lock(data_dir)
        opened: list[AuditLog | Inbox] = []
        try:
            settings = RulesSettings.from_policy(policy, thresholds)
            rules = RulesPlanner(settings)
            audit = AuditLog.open(data_dir, clock=parts.clock.now)
            opened.append(audit)
            catch_up(parts, audit.last_time())
            inbox = Inbox.open(data_dir)
            opened.append(inbox)
            # A model never plans inside the tick: it deliberates questions of judgment beside
            # the loop, and the rules plan every tick (agent/loop/deliberation.py).
            deliberations = None
            if isinstance(planner, Deliberator):
                deliberations = Deliberations(planner, data_dir, deadline_s=_deadline_of(planner))
                planner = rules
            ctx = LoopContext(
                cluster=parts.cluster(fence),
                policy=policy,
                audit=audit,
                inbox=inbox,
                settings=settings,
                planner=planner or rules,
                fallback=rules,
                deliberations=deliberations,
                telemetry=telemetry or Telemetry(),
                notifier=HeadStamped(notifier or LogNotifier(), audit.outside_head),
                rotate=rotate,
                clock=LoopClock(parts.clock),
                parts=parts,
                persist=lambda: parts.save(data_dir),
                leading=leadership.leading,
            )
            ctx.telemetry.audit_head = audit.head
            ctx.telemetry.audit_outside_head = audit.outside_head
            for reader in (ctx.planner, deliberations.model if deliberations else None):
                if isinstance(reader, ReadsHistory) and reader.history is None:
                    reader.history = ctx.recent_history
                if isinstance(reader, ReadsDecisionLog) and reader.audit is None:
                    reader.audit = lambda: ctx.audit
            graph = build_graph(ctx, open_checkpointer(data_dir))
        except BaseException:
            for part in reversed(opened):  # a half-opened loop leaves no writer lock behind
                part.close()
            lockfile.release(lock_fd)
            raise
        runtime = cls(data_dir, parts, ctx, graph, lock_fd)
        runtime.head_publisher = HeadPublisher(audit.outside_head, witness)
        runtime.leadership = leadership
        ctx.telemetry.follow(leadership)
        return runtime

    # -- start and stop ---------------------------------------------------------------------------

    def start(self) -> list[str]:
        """Finish what a killed process left; returns the decision ids resumed or closed."""
        self.leadership.start()
        # A rotation killed mid-way finishes first (its commit or its rollback), from its journal.
        open_rotation(
            self.ctx.cluster, self.data_dir, self.ctx.policy, self.ctx.audit, parts=self.parts
        ).resume()
        finished, waiting = self.threads.resume_open()
        # The log is the truth of what waits: the inbox is rebuilt from it, and a request whose
        # decision can no longer be resumed is closed as lost (never reported "resumed").
        settle_inbox(self.ctx.inbox, self.ctx.audit, waiting)
        closed = self.ctx.audit.reconcile(keep=[*waiting, *self.threads.unfinished()])
        for decision in closed:
            log.warning("interrupted", decision=decision)
        self.ctx.audit.append(
            Startup(
                pid=os.getpid(),
                host=socket.gethostname(),
                version=VERSION,
                clock=self.clock.kind,
            )
        )
        return finished + closed

    @property
    def memory(self) -> Memory:
        """What the loop remembers between ticks (idleness, calm spells, recent denials)."""
        return self.ctx.memory

    def housekeep(self) -> None:
        """Between two decisions: save the simulated cluster and the loop's memory, at most
        every SAVE_EVERY_S (both are soft state a restart can afford to find a second old; act
        saves the cluster after its actions), and the memory at once after a decision (its
        recent denials and calm spells), so that the decision does not wait for the write:
        `steward status` reading the cluster lags by up to SAVE_EVERY_S. The last decision's
        observation is let go here (LoopContext.let_go), and the WAL checkpoints of the
        decision log and of the graph's checkpoints run here, which SQLite would otherwise run
        (and sync) inside whichever append or step crossed its threshold."""
        self.ctx.let_go()
        self.head_publisher.publish()
        saving = time.monotonic() - self._saved_at >= SAVE_EVERY_S
        if saving or self._memory_due:
            write_memory(self.data_dir, self.tick_no, self.ctx.memory)
            self._memory_due = False
        if saving:
            self.parts.save(self.data_dir)
            self.ctx.audit.checkpoint()
            settle_checkpoints(self.threads.saver())
            self._saved_at = time.monotonic()

    def rest(self) -> None:
        """What a daemon ticking in real time does at the start of its wait for the next tick:
        one full garbage collection, so that no decision pauses for one.

        Every tick makes a new observation and lets the last one go, so CPython's collector
        otherwise runs a full collection over the whole heap inside a decision every few ticks:
        the slowest tick of `steward bench loop` (docs/architecture.md, CHANGELOG.md). Here it
        runs while nothing waits. The collector's thresholds are CPython's own; nothing is
        frozen. A run flat out on a simulated clock (speed 0) has no wait and skips it."""
        gc.collect()

    def close(self) -> None:
        """Flush and release: leadership, the log, the inbox, the cluster's saved state, the
        lock."""
        self.leadership.stop()
        self.head_publisher.publish()
        self.parts.save(self.data_dir)
        write_memory(self.data_dir, self.tick_no, self.ctx.memory)
        self.ctx.audit.close()
        self.ctx.inbox.close()
        lockfile.release(self._lock_fd)

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def install_signal_handlers(self) -> None:
        """SIGTERM / SIGINT: finish the current step, then stop."""

        def handler(signum: int, frame: FrameType | None) -> None:
            log.info("stopping", signal=signal.Signals(signum).name)
            self.stop.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    # -- ticks ------------------------------------------------------------------------------------

    def run(
        self,
        ticks: int | None,
        interval_s: float,
        speed: float,
        on_tick: Callable[[TickReport], None] | None = None,
    ) -> RunSummary:
        """Tick until `ticks` are done or a stop is asked; speed 0 runs as fast as possible.

        What the ticks did is summed up as they go (an unbounded run keeps no list of them);
        `on_tick` sees each report (the CLI's progress line)."""
        self.ctx.telemetry.interval_s = interval_s if speed == 0 else interval_s / speed
        if self.ctx.deliberations is not None and speed == 0:
            # Flat out on a simulated clock: the world waits for the model (reproducible runs).
            self.ctx.deliberations.wait = True
        summary = RunSummary()
        while not self.stop.is_set() and (ticks is None or summary.ticks < ticks):
            started = time.monotonic()
            report = self.tick(interval_s)
            summary.add(report)
            if on_tick is not None:
                on_tick(report)
            if speed > 0:
                self.rest()
                self.stop.wait(max(0.0, interval_s / speed - (time.monotonic() - started)))
        summary.in_progress = self.in_progress
        return summary

    def tick(self, interval_s: float) -> TickReport:
        """Let `interval_s` of the cluster's time pass, decide, then save what is due."""
        if self.parts.advance is not None:
            self.parts.advance(interval_s)
        report = self.decide()
        self.housekeep()
        return report

    def decide(self) -> TickReport:
        """One pass of the agent: resume answered decisions, then observe … record once.

        A replica that does not lead only observes (it stays ready to take over)."""
        started = time.perf_counter()
        self.ctx.telemetry.tick_started()
        if not self.leadership.leading():
            return self._stand_by(started)
        while not self.chores.empty():
            self.chores.get_nowait()()
        # Paused: answered decisions keep waiting (they run once resumed); a long action that
        # had started goes on to its end, as stopping a drain half-way would leave it worse.
        paused = pause.read(self.data_dir)
        resumed = self.threads.continue_long_actions() + (() if paused else self.resume_answered())
        resumed += self.judge_deliberated()
        self.take_asked()
        fell_back, self.deliberation_fallback = self.deliberation_fallback, None
        self.tick_no += 1
        # One decision in flight: one that a transient error stopped goes on before a new one.
        retrying = bool(self.threads.failed)
        decision_id = self.threads.failed[0] if retrying else new_decision_id()
        first = Decision(decision_id=decision_id, tick=self.tick_no)
        failed = False
        self.ctx.held = self.threads.held()
        try:
            outcome = self.threads.invoke(decision_id, None if retrying else first)
            result = outcome if outcome is not None else self.threads.values(decision_id)
        except TemporaryError as exc:
            # The step that failed was not committed: the thread goes on from it next tick.
            log.warning("tick failed; the decision goes on next tick", decision=decision_id,
                        error=str(exc))  # fmt: skip
            failed = True
            result = first.model_dump()
        if retrying and not failed:
            self.threads.failed.remove(decision_id)
        elif failed and not retrying:
            self.threads.failed.append(decision_id)
        waiting = "__interrupt__" in result
        final = decision_of(result)
        if final.split_off is not None and not failed:
            # A deliberation's answer retried here after a transient error: its waiting part.
            resumed += self._wait_split(final.split_off)
        if not waiting and not failed and decision_id not in self.threads.running:
            self.threads.delete(decision_id)
        if not failed:
            at = final.observed_at.isoformat() if final.observed_at else None
            self.threads.note_ran(
                decision_id, final, done=decision_id not in self.threads.running, at=at
            )
        report = report_of(self.tick_no, final, waiting, resumed, 0.0)
        report = dataclasses.replace(
            report,
            in_progress=tuple(self.threads.running),
            ran=tuple(self.threads.ran),
            fallback=report.fallback or fell_back,
        )
        self.threads.ran.clear()
        self.ctx.telemetry.long_actions.set(len(self.threads.running))
        self.ctx.telemetry.pending_approvals.set(len(self.ctx.inbox.listed("waiting")))
        if report.decided or resumed:
            self._memory_due = True  # written by housekeep, right after: not while this waits
        seconds = time.perf_counter() - started
        self.ctx.telemetry.tick_done(seconds, failed=failed)
        report = dataclasses.replace(report, seconds=round(seconds, 4))
        if report.decided or resumed:
            log.info("decision", **log_fields(report, final))
        if not failed:
            self.announcer.tick(paused=paused, at=self.clock.now())
        return report

    def judge_deliberated(self) -> tuple[str, ...]:
        """Run each deliberation's answer that came since the last tick as a decision of its
        own: judged by the guard on a fresh observation, superseded if its premise is gone."""
        if self.ctx.deliberations is None:
            return ()
        done: list[str] = []
        for answer in self.ctx.deliberations.finished():
            if answer.fallback_reason is not None:  # the summary counts it as a fallback
                self.deliberation_fallback = answer.fallback_reason
            thread = answer.deliberation_id
            self.ctx.held = self.threads.held()
            given = Decision(decision_id=thread, tick=self.tick_no, deliberation=answer)
            try:
                result = self.threads.invoke(thread, given)
            except TemporaryError as exc:
                log.warning("a deliberation's answer could not be judged now; it goes on next "
                            "tick", decision=thread, error=str(exc))  # fmt: skip
                self.threads.failed.append(thread)
                continue
            if result is not None:
                self.threads.finish(thread, result)
            done.append(thread)
            values = result if result is not None else self.threads.values(thread)
            split = decision_of(values).split_off if values else None
            if split is not None:
                done.extend(self._wait_split(split))
        return tuple(done)

    def _wait_split(self, split: SplitPart) -> tuple[str, ...]:
        """Run the part of an answer that needs approval as a decision of its own: judged by
        the guard on a fresh observation, recorded, and waiting in the approval inbox
        (agent/loop/approval_split.py)."""
        thread = split.decision_id
        if self.ctx.audit.decision(thread) or self.ctx.inbox.get(thread) is not None:
            return ()  # taken already (the answer's decision ran again after a restart)
        given = Decision(decision_id=thread, tick=self.tick_no, split_part=split)
        judged = self._judge_apart(given, "a split-off part")
        if judged is None:
            return ()
        log.info("split-off part judged", decision=thread, split_from=split.split_from,
                 waiting=judged)  # fmt: skip
        return (thread,)

    def _judge_apart(self, given: Decision, what: str) -> bool | None:
        """Run `given` through the graph as a decision of its own; whether it waits for a
        person, or None when a temporary error stopped it (it goes on next tick)."""
        thread = given.decision_id
        self.ctx.held = self.threads.held()
        try:
            result = self.threads.invoke(thread, given)
        except TemporaryError as exc:
            log.warning(f"{what} could not be judged now; it goes on next tick",
                        decision=thread, error=str(exc))  # fmt: skip
            self.threads.failed.append(thread)
            return None
        if result is None:
            return False
        self.threads.finish(thread, result)
        return "__interrupt__" in result

    def take_asked(self) -> tuple[str, ...]:
        """Run each proposal handed over from a question (`steward ask`, `@steward`) through
        the graph as a decision of its own: judged by the guard on a fresh observation,
        recorded, and waiting in the approval inbox (agent/approvals/asked.py)."""
        done: list[str] = []
        for proposal in take_handed(self.data_dir):
            thread = proposal.decision_id
            if self.ctx.audit.decision(thread) or self.ctx.inbox.get(thread) is not None:
                log.warning("asked proposal already taken; dropped", decision=thread)
                continue
            given = Decision(decision_id=thread, tick=self.tick_no, asked=proposal)
            waiting = self._judge_apart(given, "an asked proposal")
            if waiting is None:
                continue
            log.info("asked proposal judged", decision=thread, waiting=waiting,
                     by=proposal.asked_by, channel=proposal.channel)  # fmt: skip
            done.append(thread)
        return tuple(done)

    def _stand_by(self, started: float) -> TickReport:
        """A standby's tick: observe (so it is ready, and /healthz says so), decide nothing."""
        self.tick_no += 1
        failed = False
        try:
            state = self.ctx.observe(f"standby-{self.tick_no}")
            at = state.observed_at.isoformat()
        except TemporaryError as exc:
            log.warning("standby could not observe", error=str(exc))
            failed, at = True, ""
        seconds = time.perf_counter() - started
        self.ctx.telemetry.tick_done(seconds, failed=failed)
        return standby_report(self.tick_no, at, seconds)

    def resume_answered(self) -> tuple[str, ...]:
        """Resume every decision a human approved or denied since the last tick, and every one
        that waited past approval.expires_after (refused at act, rule approval.expired)."""
        done: list[str] = []
        now = self.clock.now()
        expire_due(self.ctx.inbox, self.ctx.policy, now)
        for pending in self.ctx.inbox.to_resume():
            thread = pending.decision_id
            snapshot = self.graph.get_state(config(thread))
            if snapshot.interrupts:
                answer = resume_answer(pending, now)
                self.ctx.held = self.threads.held()
                result = self.threads.invoke(thread, Command(resume=answer.model_dump(mode="json")))
                if result is not None:
                    self.threads.finish(thread, result)
                log.info("resumed", decision=thread, answer=answer.answer, by=answer.principal)
            if any(isinstance(a, RotateMode) for a in pending.actions):
                self.ctx.memory = restart_mode_dwell(self.ctx.memory, self.clock.now())
            self.ctx.inbox.mark_resumed(thread)
            done.append(thread)
        return tuple(done)

    # -- long actions -----------------------------------------------------------------------------

    @property
    def in_progress(self) -> tuple[str, ...]:
        """Decisions whose long action is still going on."""
        return tuple(self.threads.running)

    def open_threads(self) -> list[str]:
        """Graph threads still in the checkpoints: killed mid-way or waiting for a human."""
        return self.threads.open_threads()


def _deadline_of(model: Deliberator) -> float:
    """The model's own deadline for one decision (its settings'), 240 s when it has none."""
    settings = getattr(model, "settings", None)
    deadline = getattr(settings, "deadline_s", None)
    return float(deadline) if isinstance(deadline, int | float) else 240.0
