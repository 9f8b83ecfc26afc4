"""`steward ask` runs through CliRunner, which points structlog at the runner's stream; that
stream is closed after the test, so the logging set-up is put back for the tests that follow."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def _logging_put_back() -> Iterator[None]:
    yield
    structlog.reset_defaults()
