"""Fixtures of the audit tests: a fresh log in a temp data dir, no key leaking in from outside."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.audit import KEY_ENV, AuditLog
from tests.audit.builders import FakeClock


@pytest.fixture(autouse=True)
def _no_key_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def log(tmp_path: Path, clock: FakeClock) -> Iterator[AuditLog]:
    with AuditLog.open(tmp_path, clock=clock) as opened:
        yield opened
