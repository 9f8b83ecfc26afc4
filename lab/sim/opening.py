"""The simulated cluster as the product's backend `sim`: opened over a data dir, from a scenario.

pyproject.toml declares `BACKEND` under the entry point group `steward.backends` (name `sim`);
the composition root finds it there (tools/backends/plugins.py) and never imports the lab. A
fresh data dir gets the built-in day (lab/sim/day.py) unless a scenario names another; a
scenario is a file, or the name of one shipped in lab/scenarios/ (`link-11-percent`).
"""

from __future__ import annotations

from pathlib import Path

from agent.audit.head_file import history_in
from agent.daemon.compose import has_history
from lab.scenarios import SCENARIOS_DIR
from lab.sim import store
from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.sim.scenario import Scenario, load_scenario
from tools.backends.plugins import OpenedSimulation
from tools.errors import InvalidInput
from tools.model import ClusterState


def open_sim(data_dir: Path, scenario: Path | None) -> SimCluster:
    """The data dir's simulated cluster (see the module docstring).

    A data dir belongs to one cluster: a scenario other than the one it holds is refused once
    the data dir has a history (`reset` archives it first)."""
    saved = store.load(data_dir)
    if saved is None and (history := history_in(data_dir)):
        raise InvalidInput(
            f"the simulated cluster {store.path_in(data_dir)} is missing, but {data_dir} has "
            f"history ({', '.join(history)}): it was lost or deleted, and a cluster rebuilt "
            "from the scenario would not be the one the log describes. Restore sim.json from "
            "a backup; to start afresh, pass --reset (the old log and state are archived)"
        )
    if scenario is not None:
        chosen = load_scenario(resolve_scenario(scenario))
        if saved is not None and saved.scenario != chosen and has_history(data_dir):
            raise InvalidInput(
                f"{data_dir} holds the simulated cluster of scenario {saved.scenario.name!r} "
                f"and its history; {scenario} is another ({chosen.name!r}). Pass --reset to "
                "archive the old log and state (kept readable under archive/) and start over, "
                "or give this scenario its own --data-dir"
            )
        return SimCluster.open(data_dir, chosen)
    if saved is not None:
        return SimCluster.open(data_dir)
    return SimCluster.open(data_dir, default_day())


def resolve_scenario(path: Path) -> Path:
    """A scenario file, or the name of one shipped with Steward (`link-11-percent`)."""
    if path.is_file() or path.parent != Path("."):
        return path
    shipped = SCENARIOS_DIR / f"{path.name.removesuffix('.yaml')}.yaml"
    return shipped if shipped.exists() else path


def open_scenario(path: Path) -> Scenario:
    """A scenario file (or a shipped scenario's name), checked (InvalidInput: FILE:LINE:COL)."""
    return load_scenario(resolve_scenario(path))


class SimBackend:
    """What `steward.backends: sim` names (tools.backends.plugins.SimulatedBackend)."""

    def open(self, data_dir: Path, scenario: Path | None) -> OpenedSimulation:
        sim = open_sim(data_dir, scenario)
        return OpenedSimulation(
            cluster=sim,
            name=sim.scenario.name,
            duration_s=sim.scenario.duration_s,
            speed=sim.scenario.speed,
            elapsed_s=sim.elapsed_s,
        )

    def check_scenario(self, path: Path) -> None:
        open_scenario(path)

    def observe_scenario(self, path: Path) -> ClusterState:
        return SimCluster.from_scenario(open_scenario(path)).observe()


BACKEND = SimBackend()
