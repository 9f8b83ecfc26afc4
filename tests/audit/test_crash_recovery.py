"""A writer killed with kill -9 loses nothing that was durable, and the restart reconciles."""

from __future__ import annotations

from pathlib import Path

from agent.audit import AuditLog, Interrupted
from tests.audit.builders import intent
from tests.audit.processes import kill_9, read_line, writer


def test_killed_between_intent_and_outcome_the_restart_records_it_interrupted(
    tmp_path: Path,
) -> None:
    with writer(tmp_path, "intent") as proc:
        assert read_line(proc) == "durable d-crashed"
        kill_9(proc)
    with AuditLog.open(tmp_path) as log:
        assert log.verify().ok
        assert [r.decision_id for r in log.unfinished_intents()] == ["d-crashed"]
        assert log.reconcile() == ["d-crashed"]
        kinds = [(r.kind, r.decision_id) for r in log.records()]
        crashed = log.records(kind="intent", decision_id="d-crashed")[0]
        report = log.verify()
    assert kinds == [
        ("startup", None),
        ("intent", "d-0"),
        ("outcome", "d-0"),
        ("intent", "d-crashed"),
        ("interrupted", "d-crashed"),
    ]
    assert crashed.payload == intent("d-crashed")
    assert report.ok and report.records == 5
    with AuditLog.open(tmp_path, readonly=True) as reader:
        closing = reader.records(kind="interrupted")[0].payload
    assert isinstance(closing, Interrupted) and closing.intent_seq == 4


def test_killed_in_a_burst_of_appends_every_acknowledged_record_is_there(
    tmp_path: Path,
) -> None:
    with writer(tmp_path, "burst") as proc:
        acknowledged = [int(read_line(proc)) for _ in range(60)]
        kill_9(proc)
    with AuditLog.open(tmp_path) as log:
        before = log.verify()
        interrupted = log.reconcile()
        after = log.verify()
        seqs = [r.seq for r in log.records()]
    assert before.ok and after.ok
    assert before.last_seq is not None and before.last_seq >= acknowledged[-1]
    assert seqs == list(range(1, len(seqs) + 1))
    assert len(interrupted) <= 1
