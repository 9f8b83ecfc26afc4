"""build_graph(): the decision flow of docs/architecture.md as one LangGraph StateGraph.

    observe -> assess -> plan -> guard -> [approve] -> act -> verify -> record
                  \\         \\
                   END        END   (nothing to decide / nothing proposed)

Each decision is one graph thread whose id is the decision id. A SQLite checkpointer saves the
state after every step (durability="sync"), so a process killed anywhere resumes the thread
where it stopped; act is idempotent per decision id (see agent/loop/nodes.py). The routing functions
are named, so the flow reads here and nowhere else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from agent.loop import nodes
from agent.loop.checkpoints import ChannelSaver
from agent.loop.context import LoopContext
from agent.loop.questions import drifting
from agent.loop.state import SERIALIZED_TYPES, Decision
from agent.support import dbfile
from agent.support.datadir import CHECKPOINT_DB
from tools.actions import ACTION_TYPES

Graph = CompiledStateGraph[Decision, None, Decision, Decision]


def after_assess(d: Decision) -> str:
    """Plan only when assess found something to decide or an anomaly to deliberate; otherwise
    the tick ends here."""
    if d.deliberation is not None or d.asked is not None or d.split_part is not None:
        return "plan"  # a deliberation's answer is judged (or superseded) whatever else is seen
    signals = d.signals
    if signals is None:
        return END
    # An anomaly no rule fixes is a question for a model, when one deliberates (questions.py).
    judged = d.deliberating and (
        bool(signals.shared_card_anomalies or signals.degraded_links) or drifting(signals)
    )
    return "plan" if signals.needs_decision or judged else END


def after_plan(d: Decision) -> str:
    """An empty plan has nothing to judge; a fresh planner failure is still written to the log."""
    if d.plan is not None and d.plan.actions:
        return "guard"
    if d.fallback_fresh or d.deliberation is not None or d.asked is not None:
        return "record"
    return END


def after_guard(d: Decision) -> str:
    """A human answers first when any action needs approval."""
    return "approve" if d.waiting else "act"


def build_graph(ctx: LoopContext, checkpointer: SqliteSaver | None) -> Graph:
    """The compiled graph, its nodes bound to `ctx`, checkpointed by `checkpointer`."""
    graph = StateGraph(Decision)
    steps: dict[str, Callable[[Decision, LoopContext], dict[str, Any]]] = {
        "observe": nodes.observe,
        "assess": nodes.assess,
        "plan": nodes.plan,
        "guard": nodes.guard,
        "approve": nodes.approve,
        "act": nodes.act,
        "verify": nodes.verify,
        "record": nodes.record,
    }
    for name, step in steps.items():
        graph.add_node(name, _bound(step, ctx))
    graph.add_edge(START, "observe")
    graph.add_edge("observe", "assess")
    graph.add_conditional_edges("assess", after_assess, ["plan", END])
    graph.add_conditional_edges("plan", after_plan, ["guard", "record", END])
    graph.add_conditional_edges("guard", after_guard, ["approve", "act"])
    graph.add_edge("approve", "act")
    graph.add_edge("act", "verify")
    graph.add_edge("verify", "record")
    graph.add_edge("record", END)
    return graph.compile(checkpointer=checkpointer)


class _Node(Protocol):
    def __call__(self, state: Decision) -> dict[str, Any]: ...


def _bound(step: Callable[[Decision, LoopContext], dict[str, Any]], ctx: LoopContext) -> _Node:
    def node(state: Decision) -> dict[str, Any]:
        return step(state, ctx)

    node.__name__ = step.__name__
    return node


LEGACY_SERIALIZED = [
    ("agent.loop.state", "Approval"),
    ("agent.audit.records", "Check"),
    *(("agent.loop.state", n) for n in ("SloView", "WorkloadSignals", "LinkSignal", "Signals")),
    *(("agent.loop.state", n) for n in ("SloMemory", "WorkloadMemory", "Memory", "Question")),
]
"""Where checkpoints written by earlier versions name a model that has moved since (the name
still resolves there): a decision waiting across an upgrade resumes with its answer."""


def open_checkpointer(data_dir: Path) -> SqliteSaver:
    """The SQLite checkpointer of a data dir.

    WAL with synchronous=NORMAL: a committed step survives the process being killed (kill -9),
    which is the failure the checkpoints are for; the decision log itself syncs every record.
    Each channel's value is stored once per version of it (agent.loop.checkpoints).
    """
    conn = dbfile.connect(
        data_dir / CHECKPOINT_DB,
        "the checkpoint DB",
        lambda p: sqlite3.connect(p, check_same_thread=False),
    )
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    allowed = [(t.__module__, t.__name__) for t in (*SERIALIZED_TYPES, *ACTION_TYPES)]
    allowed += LEGACY_SERIALIZED
    return ChannelSaver(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=allowed))


def settle_checkpoints(saver: SqliteSaver) -> None:
    """Copy the checkpoints' WAL into their database, between two decisions.

    Every step of a decision writes its checkpoint to the WAL; left to SQLite, the write that
    crosses its auto-checkpoint threshold (1,000 pages: every twenty-odd ticks at 1,000 nodes)
    also copies the WAL back and syncs the file, stalling that step for tens of milliseconds
    on a busy disk. Done here, each decision's steps find a short WAL."""
    with saver.lock:
        saver.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
