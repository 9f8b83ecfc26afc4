"""The file itself: where it lives, its journal mode, its guard against edits, its layout."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agent.audit import DB_NAME, AuditError, AuditLog
from tests.audit.builders import intent


def test_the_log_lives_in_the_data_dir_in_wal_mode(tmp_path: Path) -> None:
    data_dir = tmp_path / "state"
    with AuditLog.open(data_dir) as log:
        log.write_intent(intent("d-1"))
        assert log.path == data_dir / DB_NAME
    with closing(sqlite3.connect(data_dir / DB_NAME)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_plain_sql_cannot_update_or_delete_records(tmp_path: Path) -> None:
    with AuditLog.open(tmp_path) as log:
        log.write_intent(intent("d-1"))
    with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn:
        for statement in ("UPDATE records SET kind = 'startup'", "DELETE FROM records"):
            with pytest.raises(sqlite3.IntegrityError, match="the decision log is append-only"):
                conn.execute(statement)


def test_an_empty_batch_writes_nothing(tmp_path: Path) -> None:
    with AuditLog.open(tmp_path) as log:
        assert log.append_batch([]) == []
        report = log.verify()
    assert report.ok and report.records == 0 and report.anchor_seq is None


def test_a_reader_without_a_log_is_told_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(AuditError, match=f"no decision log at {tmp_path / DB_NAME}"):
        AuditLog.open(tmp_path, readonly=True)


def test_a_file_of_another_layout_is_refused_by_writers_and_readers(tmp_path: Path) -> None:
    AuditLog.open(tmp_path).close()
    with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn, conn:
        conn.execute("UPDATE meta SET value = '1' WHERE name = 'layout'")
    for readonly in (False, True):
        with pytest.raises(AuditError, match="has table layout 1, this steward uses layout 2"):
            AuditLog.open(tmp_path, readonly=readonly)
    with closing(sqlite3.connect(tmp_path / DB_NAME)) as conn, conn:
        conn.execute("UPDATE meta SET value = '2' WHERE name = 'layout'")
    AuditLog.open(tmp_path).close()  # the refused writer let go of the lock
