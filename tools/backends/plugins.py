"""Backends and metric sources plugged into the product by entry point, not imported by name.

The simulated cluster and the twin's readings live in the lab (`lab/`), which the product never
imports: the lab declares them in pyproject.toml under the entry point groups below, and the
composition root (agent/daemon/compose.py) asks for them by the name steward.yaml gives
(`backend: sim`, `metrics.sources: [twin]`). A name nothing declares is refused with how to
install the lab.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol, cast, runtime_checkable

from tools.backends.base import Cluster, MetricSource
from tools.errors import InvalidInput
from tools.model import ClusterState

BACKENDS = "steward.backends"
"""Entry point group: `sim` names an object that is a `SimulatedBackend`."""
METRIC_SOURCES = "steward.metric_sources"
"""Entry point group: `twin` names a `MetricSourceAt` (the URL `steward twin` serves)."""
LAB_INSTALL = "pip install 'gpu-steward[lab]'"


@dataclass(frozen=True)
class OpenedSimulation:
    """A data dir's simulated cluster, opened, with what the CLI says of it."""

    cluster: Cluster
    """Also a clock (`now` + `advance`) and persistence (`save`): tools.backends.parts finds
    them."""
    name: str
    """The scenario's name."""
    duration_s: float | None
    """How long the scenario lasts (the built-in day ends by itself); None: unbounded."""
    speed: float | None
    """The scenario's pace (simulated seconds per real second); None: real time."""
    elapsed_s: float
    """How much of the scenario has already run in this data dir."""


@runtime_checkable
class SimulatedBackend(Protocol):
    """Backend `sim`: a simulated cluster kept in the data dir, built from a scenario file."""

    def open(self, data_dir: Path, scenario: Path | None) -> OpenedSimulation:
        """The data dir's cluster; a fresh data dir gets `scenario` (None: the built-in day)."""
        ...

    def check_scenario(self, path: Path) -> None:
        """InvalidInput (FILE:LINE:COL) when the scenario file (or shipped name) is not valid."""
        ...

    def observe_scenario(self, path: Path) -> ClusterState:
        """The scenario's cluster at its start, without a data dir."""
        ...


class MetricSourceAt(Protocol):
    def __call__(self, url: str) -> MetricSource: ...


def simulated_backend() -> SimulatedBackend:
    """The plugged-in backend `sim` (InvalidInput when none is installed)."""
    found = _plugged(BACKENDS, "sim", "backend sim (the simulated cluster)")
    if not isinstance(found, SimulatedBackend):
        raise InvalidInput(f"backend sim: {found!r} ({BACKENDS}) is no SimulatedBackend")
    return found


def metric_source_at(name: str, url: str) -> MetricSource:
    """The plugged-in metric source `name`, reading from `url`."""
    found = _plugged(METRIC_SOURCES, name, f"metric source {name}")
    if not callable(found):
        raise InvalidInput(f"metric source {name}: {found!r} ({METRIC_SOURCES}) is no factory")
    return cast(MetricSourceAt, found)(url)


def _plugged(group: str, name: str, what: str) -> object:
    for point in entry_points(group=group, name=name):
        try:
            loaded: object = point.load()
        except ImportError as exc:
            raise InvalidInput(f"{what} cannot load ({exc}): {LAB_INSTALL}") from None
        return loaded
    raise InvalidInput(
        f"{what} is not installed: no entry point {group}:{name} (from a checkout, run "
        f"`pip install -e .` again to register it; else {LAB_INSTALL})"
    )
