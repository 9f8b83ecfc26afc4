"""Scenario files: the shipped ones load; a bad one is refused before anything runs, with
FILE:LINE:COL and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from lab.sim.demand import TraceDemand
from lab.sim.scenario import load_scenario
from tools.errors import InvalidInput

SHIPPED = sorted((Path(__file__).resolve().parents[2] / "lab" / "scenarios").glob("*.yaml"))
SIM_SCENARIOS = [
    "homelab-default-day",
    "azure-conv-replay",
    "link-11-percent",
    "gid-changed",
    "mps-double-count",
    "servegen-week",
]


@pytest.mark.parametrize("name", SIM_SCENARIOS)
def test_shipped_scenarios_load_and_run(name: str) -> None:
    path = next(p for p in SHIPPED if p.stem == name)
    scenario = load_scenario(path)
    sim = SimCluster.from_scenario(scenario)
    sim.advance(30)
    assert sim.observe().observed_at == scenario.start + (sim.now - scenario.start)


def test_trace_paths_are_relative_to_the_scenario_file() -> None:
    scenario = load_scenario(next(p for p in SHIPPED if p.stem == "azure-conv-replay"))
    trace = scenario.demand[0]
    assert isinstance(trace, TraceDemand) and trace.path.is_absolute() and trace.path.is_file()


def refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InvalidInput) as info:
        load_scenario(path)
    return str(info.value)


def test_unknown_key_is_refused_with_its_place(tmp_path: Path) -> None:
    message = refused(tmp_path, "name: x\nseed: 1\nfautls: []\n")
    assert message == f"{tmp_path}/bad.yaml:3:1: fautls: Extra inputs are not permitted"


def test_unknown_key_inside_a_list_item(tmp_path: Path) -> None:
    text = "demand:\n  - kind: poisson\n    target: gx10\n    rate_per_min: 3\n    burst: 9\n"
    assert refused(tmp_path, text).startswith(f"{tmp_path}/bad.yaml:5:5: demand[0].burst: Extra")


def test_wrong_type_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, "seed: seven\n")
    assert message.startswith(f"{tmp_path}/bad.yaml:1:1: seed: Input should be a valid integer")


def test_impossible_value_is_refused(tmp_path: Path) -> None:
    text = (
        "faults:\n"
        "  - kind: link_degraded\n"
        "    link: gx10-link\n"
        "    path: rail-1\n"
        "    fraction: 1.5\n"
    )
    message = refused(tmp_path, text)
    assert message.startswith(f"{tmp_path}/bad.yaml:5:5: faults[0].fraction: Input should be")


def test_names_missing_from_the_profile_are_refused(tmp_path: Path) -> None:
    text = (
        "demand:\n"
        "  - {kind: poisson, target: gx11, rate_per_min: 1}\n"
        "faults:\n"
        "  - {kind: node_loss, node: gx10-c}\n"
        "  - {kind: link_degraded, link: gx10-link, path: rail-7, fraction: 0.5}\n"
    )
    lines = refused(tmp_path, text).splitlines()
    assert lines == [
        f"{tmp_path}/bad.yaml:2:21: demand[0].target: 'gx11' is neither a workload nor a pool",
        f"{tmp_path}/bad.yaml:4:23: faults[0].node: no node named 'gx10-c'",
        f"{tmp_path}/bad.yaml:5:44: faults[1].path: "
        "gx10-link has no path 'rail-7' (rail-0, rail-1)",
    ]


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    text = "seed: x\nspeed: -1\nprofile: {kind: fleet, nodes: 0}\n"
    assert len(refused(tmp_path, text).splitlines()) == 3


def test_invalid_yaml_names_its_place(tmp_path: Path) -> None:
    assert refused(tmp_path, "name: [unclosed\n").startswith(f"{tmp_path}/bad.yaml:2:1: not valid")
