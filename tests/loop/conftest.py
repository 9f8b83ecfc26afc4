"""Shared set-up of the loop tests: a runtime on the simulated homelab in a temporary data dir."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from agent.daemon.runtime import Runtime
from lab.sim.backend import SimCluster
from lab.sim.scenario import Scenario
from policies.loader import DEFAULT_POLICY, load_policy

DATA = Path(__file__).parent / "data"
APPROVE_BURST = DATA / "approve-burst.yaml"


@pytest.fixture(autouse=True)
def _quiet_logs() -> None:
    # `steward run` through CliRunner points structlog at the runner's stream; start afresh.
    structlog.reset_defaults()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def open_runtime(data_dir: Path, scenario: Scenario, policy: Path = DEFAULT_POLICY) -> Runtime:
    """A started runtime over the scenario's simulated cluster, saved in `data_dir`."""
    sim = SimCluster.open(data_dir, scenario)
    runtime = Runtime.open(data_dir, sim, load_policy(policy))
    runtime.start()
    return runtime


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "steward"
    path.mkdir()
    yield path
