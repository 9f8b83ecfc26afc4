"""The lab plugs into the product through the entry points pyproject.toml declares: the product
finds the simulated backend, the twin's readings and the lab's commands there, and a command
whose module cannot load answers with how to install the lab (exit 2, one line)."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import typer
from typer.testing import CliRunner

from agent.cli.plugins import COMMANDS, LAB_INSTALL, add_plugged_commands
from lab.extra import missing_lab_dependencies
from lab.twin.readings import TwinReadings
from tools.backends.plugins import metric_source_at, simulated_backend


def test_the_lab_commands_are_declared() -> None:
    assert {p.name for p in entry_points(group=COMMANDS)} >= {"twin", "bench", "eval"}


def test_backend_sim_opens_the_built_in_day_in_a_fresh_data_dir(tmp_path: Path) -> None:
    opened = simulated_backend().open(tmp_path, None)
    assert opened.name == "homelab-day"
    assert opened.elapsed_s == 0.0
    assert {n.name for n in opened.cluster.observe().nodes} >= {"gx10-a", "gx10-b", "ws-1"}


def test_metric_source_twin_reads_the_twin_at_a_url() -> None:
    source = metric_source_at("twin", "http://127.0.0.1:1/")
    assert isinstance(source, TwinReadings)
    assert source.url == "http://127.0.0.1:1/twin/readings"


def test_the_dev_install_has_the_lab_extra() -> None:
    assert missing_lab_dependencies() == []


def test_a_command_whose_module_cannot_load_says_how_to_install_the_lab() -> None:
    app = typer.Typer()

    @app.command("status")
    def status() -> None:
        """A product command beside it."""

    ghost = EntryPoint(name="ghost", value="no_such_lab_module:register", group=COMMANDS)
    add_plugged_commands(app, [ghost])
    out = CliRunner().invoke(app, ["ghost", "--any", "arg"])
    assert out.exit_code == 2
    (line,) = out.output.strip().splitlines()
    assert line.startswith("error: steward ghost cannot load (No module named 'no_such_lab")
    assert line.endswith(LAB_INSTALL)
