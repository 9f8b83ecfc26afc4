"""The daemon: one writer per data dir, ticks on a virtual or real clock, clean stops.

`Runtime.open` takes the data dir's lock (two daemons never both write), opens the cluster (the
simulated one lives in the data dir), the policy, the decision log, the approval inbox and the
checkpoints. `start()` finishes what a previous process left: graph threads killed mid-way are
resumed (act reconciles instead of running anything twice), intents without a thread are closed
as interrupted. Each `tick()` first resumes decisions a human has answered, then advances the
simulated clock by the interval and runs one new decision through the graph. SIGTERM and SIGINT
let the current step finish; then the log is closed and the cluster saved.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol, runtime_checkable

import structlog
from langgraph.types import Command

from agent.approvals.inbox import Inbox, PendingDecision
from agent.audit import AuditLog, Startup, new_decision_id
from agent.daemon import lockfile
from agent.daemon.catchup import catch_up
from agent.daemon.heap import settle_heap, tidy_heap
from agent.daemon.telemetry import Telemetry
from agent.loop.context import LoopContext, Rotator
from agent.loop.graph import Graph, build_graph, open_checkpointer
from agent.loop.nodes import restart_mode_dwell
from agent.loop.state import Approval, Decision, Memory
from agent.planners.base import Planner
from agent.planners.rules import RulesPlanner, RulesSettings
from agent.rotation.runner import open_rotation
from policies.history import History
from policies.model import Policy
from tools.actions import RotateMode
from tools.backends.sim import SimCluster
from tools.errors import InvalidInput, TemporaryError

LOCK_NAME = "steward.lock"
MEMORY_NAME = "loop.json"
VERSION = "0.1.0"
SAVE_EVERY_S = 1.0
"""Between decisions the simulated cluster and the loop's memory are saved at most this often
(and always at the end): what `steward status` shows of a running agent lags by up to this."""

log = structlog.get_logger("steward.loop")


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


@runtime_checkable
class ReadsHistory(Protocol):
    """A planner that can look up what was done lately (the LLM planner's `history`)."""

    history: Callable[[], History] | None


class Runtime:
    """One loop over one data dir: `open`, then `start()`, `tick()` or `run()`, `close()`."""

    def __init__(
        self, data_dir: Path, sim: SimCluster, ctx: LoopContext, graph: Graph, lock_fd: int
    ) -> None:
        self.data_dir = data_dir
        self.sim = sim
        self.ctx = ctx
        self.graph = graph
        self._lock_fd = lock_fd
        self.tick_no, ctx.memory = _read_memory(data_dir)
        self.stop = threading.Event()
        self._saved_at = time.monotonic()
        self._failed: list[str] = []

    @classmethod
    def open(
        cls,
        data_dir: Path,
        cluster: SimCluster,
        policy: Policy,
        *,
        planner: Planner | None = None,
        rotate: Rotator | None = None,
        telemetry: Telemetry | None = None,
    ) -> Runtime:
        lock_fd = take_lock(data_dir)
        try:
            settings = RulesSettings.from_policy(policy)
            rules = RulesPlanner(settings)
            audit = AuditLog.open(data_dir, clock=lambda: cluster.now)
            catch_up(cluster, audit.last_time())
            ctx = LoopContext(
                cluster=cluster,
                policy=policy,
                audit=audit,
                inbox=Inbox.open(data_dir),
                settings=settings,
                planner=planner or rules,
                fallback=rules,
                telemetry=telemetry or Telemetry(),
                rotate=rotate,
                persist=lambda: cluster.save(data_dir),
            )
            ctx.telemetry.audit_head = audit.head
            if isinstance(ctx.planner, ReadsHistory) and ctx.planner.history is None:
                ctx.planner.history = ctx.recent_history
            graph = build_graph(ctx, open_checkpointer(data_dir))
        except BaseException:
            lockfile.release(lock_fd)
            raise
        return cls(data_dir, cluster, ctx, graph, lock_fd)

    # -- start and stop ---------------------------------------------------------------------------

    def start(self) -> list[str]:
        """Finish what a killed process left; returns the decision ids resumed or closed."""
        finished: list[str] = []
        waiting: list[str] = []
        # A rotation killed mid-way finishes first (its commit or its rollback), from its journal.
        open_rotation(self.ctx.cluster, self.data_dir, self.ctx.policy, self.ctx.audit).resume()
        for thread in self.open_threads():
            snapshot = self.graph.get_state(_config(thread))
            if snapshot.interrupts:
                waiting.append(thread)
            elif snapshot.next:
                log.info("resuming", decision=thread, at=list(snapshot.next))
                result = self.graph.invoke(None, _config(thread), durability="sync")
                self._finish(thread, result)
                finished.append(thread)
            else:
                self._delete(thread)
        closed = self.ctx.audit.reconcile(keep=waiting)
        for decision in closed:
            log.warning("interrupted", decision=decision)
        self.ctx.audit.append(Startup(pid=os.getpid(), host=socket.gethostname(), version=VERSION))
        settle_heap()
        return finished + closed

    def open_threads(self) -> list[str]:
        """Graph threads still in the checkpoints: killed mid-way or waiting for a human."""
        saver = self.graph.checkpointer
        assert saver is not None and not isinstance(saver, bool)
        seen: dict[str, None] = {}
        for item in saver.list(None):
            seen[str(item.config["configurable"]["thread_id"])] = None
        return list(seen)

    @property
    def memory(self) -> Memory:
        """What the loop remembers between ticks (idleness, calm spells, recent denials)."""
        return self.ctx.memory

    def housekeep(self) -> None:
        """Between two decisions: save the simulated cluster and the loop's memory, at most
        every SAVE_EVERY_S (both are soft state a restart can afford to find a second old; act
        saves the cluster after its actions and `decide` the memory after a decision). It runs
        after the decision, not inside it: `steward status` reading the cluster lags by up to
        SAVE_EVERY_S, the decision itself does not wait for the write. The garbage collector
        runs here too, when due (agent.daemon.heap.tidy_heap)."""
        tidy_heap()
        if time.monotonic() - self._saved_at >= SAVE_EVERY_S:
            self.sim.save(self.data_dir)
            _write_memory(self.data_dir, self.tick_no, self.ctx.memory)
            self._saved_at = time.monotonic()

    def close(self) -> None:
        """Flush and release: the log, the inbox, the cluster's saved state, the lock."""
        self.sim.save(self.data_dir)
        _write_memory(self.data_dir, self.tick_no, self.ctx.memory)
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

    def run(self, ticks: int | None, interval_s: float, speed: float) -> list[TickReport]:
        """Tick until `ticks` are done or a stop is asked; speed 0 runs as fast as possible."""
        self.ctx.telemetry.interval_s = interval_s if speed == 0 else interval_s / speed
        reports: list[TickReport] = []
        while not self.stop.is_set() and (ticks is None or len(reports) < ticks):
            started = time.monotonic()
            report = self.tick(interval_s)
            reports.append(report)
            if speed > 0:
                self.stop.wait(max(0.0, interval_s / speed - (time.monotonic() - started)))
        return reports

    def tick(self, interval_s: float) -> TickReport:
        """Let `interval_s` of the cluster's time pass, decide, then save what is due."""
        self.sim.advance(interval_s)
        report = self.decide()
        self.housekeep()
        return report

    def decide(self) -> TickReport:
        """One pass of the agent: resume answered decisions, then observe … record once."""
        started = time.perf_counter()
        self.ctx.telemetry.tick_started()
        resumed = self.resume_answered()
        self.tick_no += 1
        # One decision in flight: one that a transient error stopped goes on before a new one.
        retrying = bool(self._failed)
        decision_id = self._failed[0] if retrying else new_decision_id()
        first = Decision(decision_id=decision_id, tick=self.tick_no)
        failed = False
        try:
            result = self.graph.invoke(
                None if retrying else first, _config(decision_id), durability="sync"
            )
        except TemporaryError as exc:
            # The step that failed was not committed: the thread goes on from it next tick.
            log.warning("tick failed; the decision goes on next tick", decision=decision_id,
                        error=str(exc))  # fmt: skip
            failed = True
            result = first.model_dump()
        if retrying and not failed:
            self._failed.remove(decision_id)
        elif failed and not retrying:
            self._failed.append(decision_id)
        waiting = "__interrupt__" in result
        final = _decision(result)
        if not waiting and not failed:
            self._delete(decision_id)
        report = _report(self.tick_no, final, waiting, resumed, 0.0)
        if report.decided or resumed:
            _write_memory(self.data_dir, self.tick_no, self.ctx.memory)
        seconds = time.perf_counter() - started
        self.ctx.telemetry.tick_done(seconds, failed=failed)
        report = dataclasses.replace(report, seconds=round(seconds, 4))
        if report.decided or resumed:
            log.info("decision", **_fields(report, final))
        return report

    def resume_answered(self) -> tuple[str, ...]:
        """Resume every decision a human approved or denied since the last tick."""
        done: list[str] = []
        for pending in self.ctx.inbox.listed("approved", "denied"):
            thread = pending.decision_id
            snapshot = self.graph.get_state(_config(thread))
            if snapshot.interrupts:
                answer = _answer(pending)
                result = self.graph.invoke(
                    Command(resume=answer.model_dump(mode="json")),
                    _config(thread),
                    durability="sync",
                )
                self._finish(thread, result)
                log.info("resumed", decision=thread, answer=answer.answer, by=answer.by)
            if any(isinstance(a, RotateMode) for a in pending.actions):
                self.ctx.memory = restart_mode_dwell(self.ctx.memory, self.sim.now)
            self.ctx.inbox.mark_resumed(thread)
            done.append(thread)
        return tuple(done)

    def _finish(self, thread: str, result: dict[str, Any]) -> None:
        if "__interrupt__" not in result:
            self._delete(thread)

    def _delete(self, thread: str) -> None:
        saver = self.graph.checkpointer
        assert saver is not None and not isinstance(saver, bool)
        saver.delete_thread(thread)


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def _decision(result: dict[str, Any]) -> Decision:
    values = {k: v for k, v in result.items() if not k.startswith("__")}
    return Decision.model_validate(values)


def _answer(pending: PendingDecision) -> Approval:
    assert pending.answered_at is not None and pending.answered_by is not None
    return Approval(
        answer="approved" if pending.status == "approved" else "denied",
        by=pending.answered_by,
        reason=pending.reason,
        at=pending.answered_at,
    )


def _report(
    tick: int, d: Decision, waiting: bool, resumed: tuple[str, ...], seconds: float
) -> TickReport:
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
    )


def _fields(report: TickReport, d: Decision) -> dict[str, object]:
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


# -- the lock and the memory file -------------------------------------------------------------


def take_lock(data_dir: Path) -> int:
    """The data dir's daemon lock; InvalidInput naming the holder if another process has it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_NAME
    return lockfile.take(
        path,
        lambda holder: InvalidInput(
            f"another steward (pid {holder}) runs on {data_dir} (lock {path}); stop it first, "
            "or give this one its own --data-dir"
        ),
    )


@contextlib.contextmanager
def locked(data_dir: Path) -> Iterator[None]:
    fd = take_lock(data_dir)
    try:
        yield
    finally:
        lockfile.release(fd)


def _read_memory(data_dir: Path) -> tuple[int, Memory]:
    path = data_dir / MEMORY_NAME
    if not path.is_file():
        return 0, Memory()
    data = json.loads(path.read_text())
    return int(data["tick"]), Memory.model_validate(data["memory"])


def read_memory(data_dir: Path) -> Memory:
    """The loop's memory as the last tick left it (for `steward plan`)."""
    return _read_memory(data_dir)[1]


def _write_memory(data_dir: Path, tick: int, memory: Memory) -> None:
    path = data_dir / MEMORY_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"tick": tick, "memory": memory.model_dump(mode="json")}))
    os.replace(tmp, path)
