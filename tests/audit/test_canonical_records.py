"""Any payload the loop may write hashes, stores, verifies and reads back unchanged."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.audit import AuditLog, Fallback, Intent, Record
from agent.audit.chain import body_for, canonical_json, hash_body, parse_body
from tests.audit.builders import T0, FakeClock, intent

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
decision_ids = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,40}\Z")


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    decision_id=decision_ids,
    signals=st.dictionaries(st.text(max_size=12), json_values, max_size=6),
    rationale=st.text(max_size=200),
    reason=st.text(min_size=1, max_size=80),
)
def test_written_records_verify_and_read_back_equal(
    tmp_path_factory: pytest.TempPathFactory,
    decision_id: str,
    signals: dict[str, object],
    rationale: str,
    reason: str,
) -> None:
    written = intent(decision_id).model_copy(update={"signals": signals, "rationale": rationale})
    written = Intent.model_validate(written.model_dump())
    fallback = Fallback(decision_id=decision_id, from_planner="llm", reason=reason)
    with AuditLog.open(tmp_path_factory.mktemp("log"), clock=FakeClock()) as log:
        log.append(fallback)
        log.write_intent(written)
        report = log.verify()
        read = [r.payload for r in log.records()]
    assert report.ok, report.summary()
    assert read == [fallback, written]


def test_the_hash_covers_the_canonical_body_and_nothing_else() -> None:
    body = body_for(1, T0, intent("d-1"), "0" * 64)
    assert body == canonical_json(json.loads(body))
    assert body.startswith('{"decision_id":"d-1","kind":"intent","payload":{')
    assert body.endswith(
        f',"prev_hash":"{"0" * 64}","seq":1,"time":"2026-11-30T09:00:00.000000+00:00","v":1}}'
    )
    record = parse_body(body, hash_body(body), None)
    assert isinstance(record, Record) and record.payload == intent("d-1")


def test_a_body_from_a_newer_schema_is_refused_with_the_fix() -> None:
    body = body_for(1, T0, intent("d-1"), "0" * 64).replace('"v":1}', '"v":2}')
    with pytest.raises(
        ValueError, match="schema version 2; this steward reads version 1 — upgrade"
    ):
        parse_body(body, hash_body(body), None)
