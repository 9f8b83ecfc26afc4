"""Shared set-up of the approval tests: a freeze policy, a recording notifier, CLI helpers."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from agent.cli.app import app
from agent.daemon.runtime import Runtime
from agent.support.notices import Notice
from lab.sim.backend import SimCluster
from tests.loop.conftest import APPROVE_BURST

runner = CliRunner()
FREEZE = 'windows: [{name: freeze, start: "01:05", end: "23:59", allow: nothing}]\n'
"""The issue's freeze: from 01:05 local (00:05 UTC on the simulated day) to the day's end."""


class Recorder:
    """A notifier that keeps what it is told (a real implementation of the Protocol)."""

    def __init__(self) -> None:
        self.notices: list[Notice] = []

    def notify(self, notice: Notice) -> None:
        self.notices.append(notice)

    def kinds(self) -> list[str]:
        return [n.kind for n in self.notices]


def policy_with(tmp_path: Path, extra: str, name: str = "policy.yaml") -> Path:
    """approve-burst.yaml with `extra` YAML appended (top-level keys)."""
    path = tmp_path / name
    path.write_text(APPROVE_BURST.read_text() + "\n" + extra)
    return path


def sim_of(runtime: Runtime) -> SimCluster:
    """The simulated cluster a test runtime acts on (to move its clock, or save it)."""
    sim = runtime.parts.orchestrator
    assert isinstance(sim, SimCluster)
    return sim


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    structlog.reset_defaults()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "steward"
    path.mkdir()
    yield path
