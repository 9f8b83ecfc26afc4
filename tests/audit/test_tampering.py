"""Every kind of tampering with audit.db is found, and the first bad record is named."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.audit import DB_NAME, KEY_ENV, AuditError, AuditLog, Startup, VerifyReport
from tests.audit import tamper
from tests.audit.builders import T0, FakeClock, approval, intent, outcome

KEY = b"correct horse battery staple"


def build(data_dir: Path, decisions: int = 3, key: bytes | None = None) -> Path:
    """startup, then per decision: intent, approval, outcome (1 + 3n records)."""
    with AuditLog.open(data_dir, key=key, clock=FakeClock()) as log:
        log.append(Startup(pid=4242, host="gx10-a", version="0.1.0"))
        for n in range(decisions):
            log.write_intent(intent(f"d-{n}"))
            log.write_approval(approval(f"d-{n}"))
            log.write_outcome(outcome(f"d-{n}"))
    return data_dir / DB_NAME


def verify(data_dir: Path, key: bytes | None = None) -> VerifyReport:
    with AuditLog.open(data_dir, key=key, readonly=True) as log:
        return log.verify()


def first(report: VerifyReport) -> tuple[int | None, str]:
    assert not report.ok
    assert report.first is not None
    return report.first.seq, report.first.problem


def test_an_untouched_log_verifies(tmp_path: Path) -> None:
    build(tmp_path)
    report = verify(tmp_path)
    assert report.ok and report.records == 10 and report.last_seq == 10
    assert report.summary().startswith("ok: 10 record(s), chain intact up to seq 10")


def test_an_edited_payload_is_named_edited(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.edit_payload(db, 5, lambda p: p.update(principal="mallory"))
    report = verify(tmp_path)
    assert first(report) == (5, "edited")
    assert report.problems_total == 1
    assert "record seq 5: edited — its content does not match its hash" in report.summary()


def test_an_edited_index_column_is_named_edited(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.set_column(db, 3, "kind", "startup")
    report = verify(tmp_path)
    assert first(report) == (3, "edited")
    assert "the kind column says 'startup'" in report.summary()


def test_a_deleted_row_is_named_missing(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.delete(db, 4)
    report = verify(tmp_path)
    assert first(report) == (5, "missing")
    assert "record 4 is gone (seq 5 follows 3)" in report.summary()


def test_a_deleted_first_row_is_named_missing(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.delete(db, 1)
    assert first(verify(tmp_path)) == (2, "missing")


def test_two_swapped_rows_are_named_reordered(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.swap(db, 3, 4)
    report = verify(tmp_path)
    assert first(report) == (3, "reordered")
    assert "this place holds record seq 4" in report.summary()


def test_a_cut_tail_is_named_truncated(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.cut_tail(db, 7)
    report = verify(tmp_path)
    assert first(report) == (7, "truncated")
    assert "anchor says seq 10 was written (3 record(s) cut from the tail)" in report.summary()


def test_a_removed_anchor_is_named_truncated(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.drop_anchor(db)
    assert first(verify(tmp_path)) == (10, "truncated")


def test_a_record_appended_behind_the_writers_back_is_named_unanchored(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.append_forged(db)
    assert first(verify(tmp_path)) == (11, "unanchored")


def test_a_rewritten_record_with_a_fresh_hash_is_named_by_its_successor(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.rehash(db, 6, lambda p: p.update(error="forged"))
    report = verify(tmp_path)
    assert first(report) == (6, "edited")
    assert "rewritten with a new hash" in report.summary()


def test_a_record_of_a_newer_schema_is_named_unsupported(tmp_path: Path) -> None:
    db = build(tmp_path)
    tamper.rehash(db, 4, lambda body: body.update(v=2), whole=True)
    report = verify(tmp_path)
    assert first(report) == (4, "unsupported")
    assert "schema version 2; upgrade steward" in report.summary()


def test_without_a_key_a_reforged_chain_is_caught_by_the_head_held_outside_the_log(
    tmp_path: Path,
) -> None:
    db = build(tmp_path)
    tamper.reforge(db, 2, lambda p: p.update(rationale="forged"))
    report = verify(tmp_path)
    assert not report.ok and any(p.problem == "replaced" for p in report.problems)


def test_without_a_key_a_chain_reforged_with_its_witness_is_not_detectable(
    tmp_path: Path,
) -> None:
    # The documented limit that the HMAC key (and an outside witness of the head) exist for.
    db = build(tmp_path)
    tamper.reforge(db, 2, lambda p: p.update(rationale="forged"))
    tamper.rewitness(tmp_path)
    assert verify(tmp_path).ok


def test_with_a_key_a_reforged_chain_is_named_bad_hmac(tmp_path: Path) -> None:
    db = build(tmp_path, key=KEY)
    assert verify(tmp_path, KEY).ok
    tamper.reforge(db, 4, lambda p: p.update(rationale="forged"))
    report = verify(tmp_path, KEY)
    assert first(report) == (4, "bad_hmac")
    assert "its HMAC does not match" in report.summary()


def test_with_a_key_a_chain_reforged_with_another_key_is_named_bad_hmac(tmp_path: Path) -> None:
    db = build(tmp_path, key=KEY)
    tamper.reforge(db, 4, lambda p: p.update(rationale="forged"), key=b"guessed")
    assert first(verify(tmp_path, KEY)) == (4, "bad_hmac")


def test_with_a_key_stripped_macs_are_named_hmac_missing(tmp_path: Path) -> None:
    db = build(tmp_path, key=KEY)
    tamper.reforge(db, 4, lambda p: p.update(rationale="forged"), strip_macs=True)
    report = verify(tmp_path, KEY)
    assert first(report) == (4, "hmac_missing")
    assert "a key is set but this record carries no HMAC" in report.summary()


def test_with_a_key_a_log_stripped_of_every_mac_is_named_at_its_anchor(tmp_path: Path) -> None:
    db = build(tmp_path, key=KEY)
    tamper.reforge(db, 1, lambda p: p.update(note="forged"), strip_macs=True)
    report = verify(tmp_path, KEY)
    # The data dir recorded that its log is signed from seq 1 (audit.signing): the first
    # record stripped of its MAC is named, and the anchor after it.
    assert first(report) == (1, "hmac_missing")
    assert any("anchor carries no HMAC" in p.message for p in report.problems)


def test_with_a_key_one_unsigned_record_among_signed_is_named_hmac_missing(
    tmp_path: Path,
) -> None:
    db = build(tmp_path, key=KEY)
    tamper.set_column(db, 5, "mac", None)  # type: ignore[arg-type]
    assert first(verify(tmp_path, KEY)) == (5, "hmac_missing")


def test_with_a_key_a_cut_tail_reanchored_without_the_key_is_named_bad_hmac(
    tmp_path: Path,
) -> None:
    db = build(tmp_path, key=KEY)
    tamper.cut_tail(db, 7)
    tamper.reanchor(db, 7)
    assert first(verify(tmp_path, KEY)) == (7, "bad_hmac")


def test_a_log_started_unsigned_and_signed_later_verifies_with_the_key(tmp_path: Path) -> None:
    build(tmp_path, decisions=1)
    with AuditLog.open(tmp_path, key=KEY, clock=FakeClock(T0 + timedelta(hours=1))) as log:
        log.write_intent(intent("d-signed"))
    report = verify(tmp_path, KEY)
    assert report.ok and report.signed_records == 1


def test_a_signed_log_refuses_a_writer_without_its_key(tmp_path: Path) -> None:
    build(tmp_path, decisions=1, key=KEY)
    with pytest.raises(AuditError, match="is signed \\(HMAC\\) but STEWARD_AUDIT_KEY is not set"):
        AuditLog.open(tmp_path)
    with pytest.raises(AuditError, match="STEWARD_AUDIT_KEY does not match the key"):
        AuditLog.open(tmp_path, key=b"another key")
    assert verify(tmp_path, KEY).ok


def test_the_key_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY.decode())
    build(tmp_path, decisions=1)
    report = verify(tmp_path)
    assert report.ok and report.hmac_checked and report.signed_records == 4
    monkeypatch.delenv(KEY_ENV)
    unchecked = verify(tmp_path)
    assert unchecked.ok and not unchecked.hmac_checked
    assert "4 record(s) carry an HMAC but no key was given" in unchecked.summary()


TAMPERINGS = {
    "edited": lambda db, seq: tamper.edit_payload(db, seq, lambda p: p.update(kind_note="x")),
    "missing": tamper.delete,
    "reordered": lambda db, seq: tamper.swap(db, seq, seq + 1),
    "truncated": tamper.cut_tail,
}


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    decisions=st.integers(min_value=2, max_value=5),
    kind=st.sampled_from(sorted(TAMPERINGS)),
    data=st.data(),
)
def test_any_single_tampering_is_found_at_the_right_record(
    tmp_path_factory: pytest.TempPathFactory, decisions: int, kind: str, data: st.DataObject
) -> None:
    data_dir = tmp_path_factory.mktemp("log")
    db = build(data_dir, decisions=decisions)
    last = 1 + 3 * decisions
    seq = data.draw(st.integers(min_value=2, max_value=last - 1), label="seq")
    TAMPERINGS[kind](db, seq)
    expected = {"edited": seq, "missing": seq + 1, "reordered": seq, "truncated": seq}[kind]
    assert first(verify(data_dir)) == (expected, kind)
