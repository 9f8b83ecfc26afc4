"""A torn last line in the rotation journal is cut off before anything is appended, with a
warning and a record in the decision log; damage elsewhere is still refused.

Before: the next entry was appended onto the fragment, and from then on `mode status|journal|
resume` and `run` failed on the file.
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.audit import AuditLog, ModeStep
from agent.rotation.runner import open_rotation
from lab.sim.backend import SimCluster
from policies.loader import load_default_policy
from tools.errors import InvalidInput
from tools.modes import Journal

T0 = datetime(2026, 3, 2, tzinfo=UTC)
FRAGMENT = '{"txn": "t1", "seq": 2, "at": "2026-03-02T00:00:00Z", "kind": "st'


def _begun(data_dir: Path) -> Journal:
    journal = Journal.open(data_dir)
    journal.append("t1", "begin", T0)
    journal.append("t1", "step", T0, step="drain", status="started")
    return journal


def test_an_entry_after_a_torn_line_is_not_appended_onto_the_fragment(tmp_path: Path) -> None:
    journal = _begun(tmp_path)
    with journal.path.open("a") as handle:
        handle.write(FRAGMENT)

    journal.append("t1", "step", T0, step="drain", status="done")

    again = Journal.open(tmp_path)
    assert [(e.step, e.status) for e in again.entries()] == [
        (None, None),
        ("drain", "started"),
        ("drain", "done"),
    ]
    assert FRAGMENT not in journal.path.read_text()
    assert len(journal.cut) == 1 and "cut a torn last line" in journal.cut[0]


def test_a_complete_line_whose_checksum_fails_at_the_tail_is_torn(tmp_path: Path) -> None:
    journal = _begun(tmp_path)
    text = journal.path.read_text()
    journal.path.write_text(text[:-12] + "X" + text[-11:])  # one byte of the last line flipped

    assert [e.step for e in Journal.open(tmp_path).entries()] == [None]
    assert Journal.open(tmp_path).cut_torn_tail() is not None


def test_a_bad_checksum_in_the_middle_is_damage_refused_with_its_place(tmp_path: Path) -> None:
    journal = _begun(tmp_path)
    journal.append("t1", "end", T0, result="refused")
    lines = journal.path.read_text().splitlines(keepends=True)
    body, _, _ = lines[1].rstrip("\n").rpartition("\t")
    forged = body.replace("drain", "probe") + f"\t{zlib.crc32(body.encode()):08x}\n"
    journal.path.write_text(lines[0] + forged + lines[2])

    with pytest.raises(InvalidInput, match=r"journal\.jsonl:2: .*checksum"):
        list(Journal.open(tmp_path).entries())


def test_the_daemon_start_cuts_a_torn_tail_and_records_it(tmp_path: Path) -> None:
    sim = SimCluster.open(tmp_path)
    journal = Journal.open(tmp_path)
    with AuditLog.open(tmp_path, clock=lambda: sim.now) as audit:
        journal.path.parent.mkdir(parents=True)
        journal.path.write_text(FRAGMENT)  # the first entry ever, torn
        open_rotation(sim, tmp_path, load_default_policy(), audit).resume()
        steps = [r.payload for r in audit.records(kind="mode_step")]

    assert len(steps) == 1
    step = steps[0]
    assert isinstance(step, ModeStep) and step.status == "torn_tail_cut"
    assert Journal.open(tmp_path).path.read_text() == ""
