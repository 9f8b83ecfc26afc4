"""A lost, emptied, cut or replaced decision log is found, never taken for a fresh start.

Before: `: > audit.db` (or deleting it) and a new run gave `audit verify` -> "ok: 1 record(s),
chain intact", with STEWARD_AUDIT_KEY set too; the head of the log lived only inside the file
that was wiped.
"""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.audit import DB_NAME, HEAD_FILE, KEY_ENV, AuditLog, LogLost, Startup
from agent.cli.app import app
from tests.audit import tamper
from tests.audit.builders import T0, FakeClock, approval, intent, outcome

KEY = b"correct horse battery staple"
runner = CliRunner()


def _used(data_dir: Path, key: bytes | None = None, start: int = 0) -> Path:
    with AuditLog.open(data_dir, key=key, clock=FakeClock(T0 + timedelta(hours=start))) as log:
        log.append(Startup(pid=4242, host="gx10-a", version="0.1.0"))
        for n in range(2):
            log.write_intent(intent(f"d-{start}-{n}"))
            log.write_approval(approval(f"d-{start}-{n}"))
            log.write_outcome(outcome(f"d-{start}-{n}"))
    return data_dir


def _verify(data_dir: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["audit", "verify", "--data-dir", str(data_dir)])
    return result.exit_code, result.stdout + result.stderr


def test_an_emptied_log_fails_verify_naming_what_is_missing(tmp_path: Path) -> None:
    _used(tmp_path)
    (tmp_path / DB_NAME).write_bytes(b"")  # : > audit.db

    code, text = _verify(tmp_path)

    assert code == 1
    assert "audit.db is empty (0 bytes)" in text and "says seq 7" in text
    assert HEAD_FILE in text


def test_a_deleted_log_fails_verify(tmp_path: Path) -> None:
    _used(tmp_path)
    (tmp_path / DB_NAME).unlink()

    code, text = _verify(tmp_path)

    assert code == 1 and "is missing" in text and "says seq 7" in text


def test_an_emptied_log_is_refused_by_the_writer_and_left_as_found(tmp_path: Path) -> None:
    _used(tmp_path)
    (tmp_path / DB_NAME).write_bytes(b"")

    with pytest.raises(LogLost, match=r"has history \(audit.head\)"):
        AuditLog.open(tmp_path)

    assert (tmp_path / DB_NAME).stat().st_size == 0  # the evidence is not overwritten


def test_a_fresh_log_after_the_old_one_was_emptied_fails_verify(tmp_path: Path) -> None:
    """What the issue saw: wipe, then a new run writes one record into a fresh file."""
    _used(tmp_path)
    (tmp_path / DB_NAME).unlink()
    (tmp_path / HEAD_FILE).rename(tmp_path / "kept.head")
    with AuditLog.open(tmp_path, clock=FakeClock()) as log:
        log.append(Startup(pid=1, host="gx10-a", version="0.1.0"))
    (tmp_path / "kept.head").replace(tmp_path / HEAD_FILE)

    code, text = _verify(tmp_path)

    assert code == 1 and "says seq 7" in text and "ends at seq 1" in text


def test_a_cut_tail_with_a_rewritten_anchor_row_is_found(tmp_path: Path) -> None:
    _used(tmp_path)
    db = tmp_path / DB_NAME
    tamper.cut_tail(db, 4)
    with closing(sqlite3.connect(db)) as conn:
        digest = conn.execute("SELECT hash FROM records WHERE seq = 4").fetchone()[0]
        conn.execute("UPDATE head SET seq = 4, hash = ?", (digest,))
        conn.commit()

    code, text = _verify(tmp_path)

    assert code == 1 and "truncated" in text and "3 record(s) are missing" in text


def test_a_whole_file_replaced_by_another_log_is_found(tmp_path: Path) -> None:
    other = _used(tmp_path / "other", start=5)
    used = _used(tmp_path / "used")
    shutil.copy(other / DB_NAME, used / DB_NAME)

    code, text = _verify(used)

    assert code == 1 and "the log was replaced" in text


def test_with_a_key_a_rewritten_witness_is_bad_hmac(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _used(tmp_path, key=KEY)
    (tmp_path / DB_NAME).unlink()
    with AuditLog.open(tmp_path / "fresh", key=KEY) as log:
        log.append(Startup(pid=1, host="gx10-a", version="0.1.0"))
    shutil.copy(tmp_path / "fresh" / DB_NAME, tmp_path / DB_NAME)
    tamper.rewitness(tmp_path)  # an attacker without the key re-anchors the new file
    monkeypatch.setenv(KEY_ENV, KEY.decode())

    code, text = _verify(tmp_path)

    assert code == 1 and "HMAC" in text and "audit.head" in text


def test_with_a_key_an_emptied_log_still_fails_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _used(tmp_path, key=KEY)
    (tmp_path / DB_NAME).write_bytes(b"")
    monkeypatch.setenv(KEY_ENV, KEY.decode())

    code, text = _verify(tmp_path)

    assert code == 1 and "empty" in text


def test_a_missing_log_and_witness_in_a_used_data_dir_is_refused(tmp_path: Path) -> None:
    _used(tmp_path)
    with closing(sqlite3.connect(tmp_path / "inbox.db")) as conn:
        conn.execute("CREATE TABLE pending (decision_id TEXT)")
        conn.execute("INSERT INTO pending VALUES ('d-0-0')")
        conn.commit()
    (tmp_path / DB_NAME).unlink()
    (tmp_path / HEAD_FILE).unlink()

    with pytest.raises(LogLost, match=r"has history \(inbox.db\)"):
        AuditLog.open(tmp_path)


def test_an_intact_log_with_its_witness_verifies_and_reopens(tmp_path: Path) -> None:
    _used(tmp_path)
    code, text = _verify(tmp_path)
    assert code == 0 and text.startswith("ok: 7 record(s)")
    _used(tmp_path, start=1)  # a second writer session appends after the first
    assert _verify(tmp_path)[0] == 0


def test_a_witness_one_append_behind_is_a_prefix_and_passes(tmp_path: Path) -> None:
    """A crash between the commit and the witness write leaves it behind, never ahead."""
    _used(tmp_path)
    kept = (tmp_path / HEAD_FILE).read_bytes()
    with AuditLog.open(tmp_path, clock=FakeClock(T0 + timedelta(hours=1))) as log:
        log.append(Startup(pid=1, host="gx10-a", version="0.1.0"))
    (tmp_path / HEAD_FILE).write_bytes(kept)

    assert _verify(tmp_path)[0] == 0
    with AuditLog.open(tmp_path, clock=FakeClock(T0 + timedelta(hours=2))):
        pass  # the writer brings the witness up to date
    assert '"seq":8' in (tmp_path / HEAD_FILE).read_text()


def test_a_clock_behind_the_log_does_not_write_a_record_back_in_time(tmp_path: Path) -> None:
    """Before: one record's time went backwards in random kills (a cluster restored older)."""
    _used(tmp_path, start=1)
    with AuditLog.open(tmp_path, clock=FakeClock(T0)) as log:
        log.append(Startup(pid=1, host="gx10-a", version="0.1.0"))
    with AuditLog.open(tmp_path, readonly=True) as log:
        times = [r.time for r in log.records()]
        assert times == sorted(times) and len(times) == 8
        assert log.verify().ok


def test_the_history_files_are_the_names_their_owners_use() -> None:
    from agent.approvals.inbox import DB_NAME as INBOX
    from agent.audit.head_file import HISTORY_FILES
    from agent.support.datadir import CHECKPOINT_DB, MEMORY_NAME
    from tools.modes import Journal

    journal = Journal.open(Path("d")).path.relative_to("d").as_posix()
    assert set(HISTORY_FILES) == {CHECKPOINT_DB, INBOX, journal, MEMORY_NAME}
