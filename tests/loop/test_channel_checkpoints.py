"""The graph's checkpoints store each channel's value once per version, and read back whole.

A small graph of three steps that grows its state (as a decision does: signals, then a plan,
then verdicts) and waits for an answer in between is run on `ChannelSaver`: the state read back
is the state written, a value left alone by later steps is stored once, the checkpoints
themselves hold no values, and a thread checkpointed whole by LangGraph's own SqliteSaver (an
earlier Steward) resumes on the new saver with its answer.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from agent.loop.checkpoints import ChannelSaver


class State(TypedDict, total=False):
    signals: list[int]
    plan: str
    answer: str
    verdicts: list[str]


def _graph(saver: SqliteSaver) -> Any:
    graph = StateGraph(State)
    graph.add_node("assess", lambda s: {"signals": list(range(5000))})
    graph.add_node("plan", lambda s: {"plan": "scale llm to 3"})
    graph.add_node("approve", lambda s: {"answer": interrupt({"ask": s["plan"]})})
    graph.add_node("guard", lambda s: {"verdicts": [f"{s['plan']}: {s['answer']}"]})
    graph.add_edge(START, "assess")
    graph.add_edge("assess", "plan")
    graph.add_edge("plan", "approve")
    graph.add_edge("approve", "guard")
    graph.add_edge("guard", END)
    return graph.compile(checkpointer=saver)


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, check_same_thread=False)


CONFIG: Any = {"configurable": {"thread_id": "d-1"}}


def test_state_reads_back_whole_and_each_value_is_stored_once(tmp_path: Path) -> None:
    saver = ChannelSaver(_connect(tmp_path / "c.db"), serde=JsonPlusSerializer())
    graph = _graph(saver)
    graph.invoke({}, CONFIG)  # stops at the approval
    waiting = graph.get_state(CONFIG)
    assert waiting.values["signals"] == list(range(5000)) and waiting.next == ("approve",)
    done = graph.invoke(Command(resume="approved"), CONFIG)
    assert done["verdicts"] == ["scale llm to 3: approved"]
    assert graph.get_state(CONFIG).values == done

    conn = saver.conn
    rows = conn.execute(
        "SELECT COUNT(*) FROM steward_channels WHERE channel = 'signals' AND type != 'empty'"
    ).fetchone()
    assert rows == (1,)  # written once, though four checkpoints after it hold it
    largest = conn.execute("SELECT MAX(LENGTH(checkpoint)) FROM checkpoints").fetchone()[0]
    assert largest < 5000  # the signals are not inside any checkpoint
    history = list(saver.list(CONFIG))
    assert history[0].checkpoint["channel_values"]["signals"] == list(range(5000))

    saver.delete_thread("d-1")
    left = conn.execute("SELECT COUNT(*) FROM steward_channels").fetchone()
    assert left == (0,) and saver.get_tuple(CONFIG) is None


def test_a_thread_checkpointed_whole_by_an_earlier_version_resumes(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    old = SqliteSaver(_connect(path), serde=JsonPlusSerializer())
    _graph(old).invoke({}, CONFIG)
    old.conn.close()

    saver = ChannelSaver(_connect(path), serde=JsonPlusSerializer())
    graph = _graph(saver)
    assert graph.get_state(CONFIG).values["plan"] == "scale llm to 3"
    done = graph.invoke(Command(resume="approved"), CONFIG)
    assert done["signals"] == list(range(5000))
    assert done["verdicts"] == ["scale llm to 3: approved"]

    # And read again by a process started afresh, from the rows the new saver wrote.
    saver.conn.close()
    again = _graph(ChannelSaver(_connect(path), serde=JsonPlusSerializer()))
    assert again.get_state(CONFIG).values == done
