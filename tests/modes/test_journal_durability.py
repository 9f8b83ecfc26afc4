"""The journal is durable and honest: what it says is done happened, a torn write is ignored,
a damaged file is refused with its place, and only one rotation holds it at a time."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tools.errors import InvalidInput, TemporaryError
from tools.modes import Journal

T0 = datetime(2026, 3, 2, tzinfo=UTC)


def test_entries_come_back_in_order_with_a_sequence_per_transaction(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path)
    with journal.exclusive():
        journal.append("t1", "begin", T0, detail={"plan": {"to_mode": "split"}})
        journal.append("t1", "step", T0, step="preflight", status="started")
        journal.append("t1", "step", T0, step="preflight", status="done")
        journal.append("t1", "end", T0, result="committed")
        journal.append("t2", "begin", T0)
    again = Journal.open(tmp_path)
    assert [(e.txn, e.seq) for e in again.entries()] == [
        ("t1", 0),
        ("t1", 1),
        ("t1", 2),
        ("t1", 3),
        ("t2", 0),
    ]
    first, second = again.transactions()
    assert first.finished and first.step_status("preflight") == "done"
    assert again.unfinished() == second


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path)
    journal.append("t1", "begin", T0)
    journal.append("t1", "step", T0, step="drain", status="started")
    with journal.path.open("a") as handle:
        handle.write('{"txn": "t1", "seq": 2, "at": "2026-03-02T00:00:00Z", "kind": "st')
    entries = list(Journal.open(tmp_path).entries())
    assert [e.step for e in entries] == [None, "drain"]
    tx = Journal.open(tmp_path).unfinished()
    assert tx is not None
    last = tx.last_step()
    assert last is not None and last.status == "started"


def test_a_damaged_line_is_refused_with_its_place(tmp_path: Path) -> None:
    journal = Journal.open(tmp_path)
    journal.append("t1", "begin", T0)
    journal.append("t1", "end", T0, result="refused")
    lines = journal.path.read_text().splitlines(keepends=True)
    journal.path.write_text(lines[0] + "not json\n" + lines[1])
    with pytest.raises(InvalidInput, match=r"journal\.jsonl:2: .*move the file aside"):
        list(Journal.open(tmp_path).entries())


def test_only_one_rotation_holds_the_journal(tmp_path: Path) -> None:
    holder = Journal.open(tmp_path)
    with (
        holder.exclusive(),
        pytest.raises(TemporaryError, match="another rotation holds the lock"),
        Journal.open(tmp_path).exclusive(),
    ):
        pass
    with Journal.open(tmp_path).exclusive():
        holder.append("t1", "begin", T0)
    assert Journal.open(tmp_path).unfinished() is not None
