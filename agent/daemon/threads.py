"""`DecisionThreads`: the graph threads of a daemon's decisions, and the long actions among them.

Every decision runs as a `Suspendable` (tools/suspend.py) over its graph thread, whose id is the
decision id: it ends, waits for a human (an interrupt), or suspends in a long action — a drain
or a rotation that waits — and goes on, on a later tick, once its clock reached the wait's end.
What the long actions in progress hold (their targets, a drained node's workloads, for a
rotation every node and workload of every mode) is left alone by the decisions made meanwhile.
The actions a decision carried out are reported once, on the tick they ran or on the one its
long action ended.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_never

import structlog
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from agent.loop.graph import Graph
from agent.loop.state import Decision
from tools import actions
from tools.actions import Action
from tools.clock import Clock
from tools.errors import TemporaryError
from tools.model import ClusterState
from tools.suspend import Suspendable

log = structlog.get_logger("steward.loop")


class DecisionThreads:
    """The decisions' graph threads (see the module docstring)."""

    def __init__(
        self, graph: Graph, clock: Clock, latest: Callable[[], ClusterState | None]
    ) -> None:
        self.graph = graph
        self.clock = clock
        self._latest = latest
        self.running: dict[str, Suspendable[dict[str, Any]]] = {}
        """Decisions suspended in a long action, by id."""
        self.failed: list[str] = []
        """Decisions a transient error stopped: the next tick goes on with the first."""
        self.ran: list[str] = []
        """Actions carried out since the last tick's report (see TickReport.ran)."""
        self._reported: dict[str, set[int]] = {}
        """Per decision still going on, the outcomes already reported as ran."""

    def invoke(self, thread: str, given: Decision | Command[Any] | None) -> dict[str, Any] | None:
        """Run a decision's graph thread until it ends, waits for a human, or suspends in a long
        action (then None: it goes on in `continue_long_actions` on a later tick)."""
        task: Suspendable[dict[str, Any]] = Suspendable(
            lambda: self.graph.invoke(given, config(thread), durability="sync"),
            name=f"decision-{thread}",
        )
        if task.start():
            return task.result()
        self.running[thread] = task
        log.info("long action in progress", decision=thread)
        return None

    def resume_open(self) -> tuple[list[str], list[str]]:
        """Go on with every thread a killed process left mid-way (act reconciles instead of
        running anything twice); returns the decisions that ended and those that wait for a
        human (also one killed on its way to wait).

        One that suspends in a long action goes on from the ticks (`running`); one that meets a
        transient error (the cluster's API down as the agent comes back) goes on from the step
        that failed on the next tick (`failed`), as a tick's own decision would: neither ends
        the process, and neither is reported as ended."""
        finished: list[str] = []
        waiting: list[str] = []
        for thread in self.open_threads():
            snapshot = self.graph.get_state(config(thread))
            if snapshot.interrupts:
                waiting.append(thread)
            elif snapshot.next:
                log.info("resuming", decision=thread, at=list(snapshot.next))
                try:
                    result = self.invoke(thread, None)
                except TemporaryError as exc:
                    log.warning("resumed decision failed; it goes on next tick",
                                decision=thread, error=str(exc))  # fmt: skip
                    self.failed.append(thread)
                    continue
                if result is None:
                    continue  # a long action in progress
                self.finish(thread, result)
                if "__interrupt__" in result:
                    waiting.append(thread)
                else:
                    finished.append(thread)
            else:
                self.delete(thread)
        return finished, waiting

    def unfinished(self) -> list[str]:
        """Decisions still going on in this process: a long action in progress, or one a
        transient error stopped (their intents are open, and stay so)."""
        return [*self.running, *self.failed]

    def continue_long_actions(self) -> tuple[str, ...]:
        """Let every suspended decision whose wait is over go on; returns those that ended."""
        now = self.clock.now().timestamp()
        ended: list[str] = []
        for thread, task in list(self.running.items()):
            if not task.due(now) or not task.resume():
                continue
            del self.running[thread]
            try:
                result = task.result()
            except TemporaryError as exc:
                log.warning("long action failed; the decision goes on next tick",
                            decision=thread, error=str(exc))  # fmt: skip
                self.failed.append(thread)
                continue
            self.finish(thread, result)
            log.info("long action done", decision=thread)
            ended.append(thread)
        return tuple(ended)

    def values(self, thread: str) -> dict[str, Any]:
        """The thread's state as last checkpointed."""
        values: dict[str, Any] = dict(self.graph.get_state(config(thread)).values)
        return values

    def held(self) -> frozenset[str]:
        """What the long actions in progress hold (see the module docstring)."""
        if not self.running:
            return frozenset()
        latest = self._latest()
        held: set[str] = set()
        for thread in self.running:
            d = decision_of(self.values(thread))
            for v in d.verdicts:
                held.add(v.action.target)
                if latest is not None:
                    held |= _holds(v.action, latest)
        return frozenset(held)

    def finish(self, thread: str, result: dict[str, Any]) -> None:
        """A thread that ended (not one that waits): its actions reported, its thread deleted."""
        if "__interrupt__" not in result:
            self.note_ran(thread, decision_of(result), done=True)
            self.delete(thread)

    def note_ran(self, thread: str, d: Decision, *, done: bool, at: str | None = None) -> None:
        """Add the decision's actions carried out ok, not yet reported, to this tick's `ran`
        (stamped `at`, else now: when a resumed or long decision ended)."""
        seen = (
            self._reported.pop(thread, set()) if done else self._reported.setdefault(thread, set())
        )
        at = at or self.clock.now().isoformat()
        for o in d.outcomes:
            if (
                o.executed
                and o.ok
                and not o.dry_run
                and o.index not in seen
                and o.index < len(d.verdicts)
            ):
                seen.add(o.index)
                self.ran.append(f"{at} {d.verdicts[o.index].action.describe()}")

    def open_threads(self) -> list[str]:
        """Graph threads still in the checkpoints: killed mid-way or waiting for a human."""
        seen: dict[str, None] = {}
        for item in self.saver().list(None):
            seen[str(item.config["configurable"]["thread_id"])] = None
        return list(seen)

    def delete(self, thread: str) -> None:
        self.saver().delete_thread(thread)

    def saver(self) -> SqliteSaver:
        saver = self.graph.checkpointer
        assert isinstance(saver, SqliteSaver), "Runtime.open gives the graph a SQLite saver"
        return saver


def _holds(action: Action, state: ClusterState) -> set[str]:
    """Besides its target, what a long action in progress holds: a rotation its node group's
    nodes and workloads, a drain the workloads on its node."""
    match action:
        case actions.RotateMode():
            return {name for m in state.modes for name in (*m.nodes, *m.workloads)}
        case actions.DrainNode():
            return {w.name for w in state.workloads for r in w.placement if action.node in r.nodes}
        case (
            actions.ScaleWorkload()
            | actions.PlaceReplica()
            | actions.CordonNode()
            | actions.UncordonNode()
            | actions.NoOp()
        ):
            return set()
        case _:
            assert_never(action)


def config(thread: str) -> Any:
    """The graph config of a decision's thread."""
    return {"configurable": {"thread_id": thread}}


def decision_of(result: dict[str, Any]) -> Decision:
    """The decision in a graph's result or state values (LangGraph's own keys left out)."""
    values = {k: v for k, v in result.items() if not k.startswith("__")}
    return Decision.model_validate(values)
