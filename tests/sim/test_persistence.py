"""The cluster lives in the data dir: successive commands see the same one, and `steward status`
shows it (rich tables on a terminal, one JSON document with --json)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent.cli.app import app
from lab.sim.backend import SimCluster
from lab.sim.faults import LinkDegraded
from lab.sim.scenario import Scenario
from tests.sim.conftest import steady

EVALS = Path(__file__).resolve().parents[2] / "lab" / "scenarios"


def test_save_and_open_continue_the_same_run(tmp_path: Path) -> None:
    scenario = steady("gx10", 20)
    first = SimCluster.from_scenario(scenario)
    first.advance(90)
    first.inject(LinkDegraded(link="gx10-link", path="rail-0", fraction=0.5))
    first.scale("tts", 2)
    first.save(tmp_path)
    reopened = SimCluster.open(tmp_path)
    assert reopened.observe() == first.observe()
    first.advance(120)
    reopened.advance(120)
    assert reopened.observe() == first.observe()
    assert reopened.series() == first.series()


def test_open_creates_the_homelab_and_a_new_scenario_replaces_it(tmp_path: Path) -> None:
    sim = SimCluster.open(tmp_path)
    assert sim.scenario == Scenario()
    assert (tmp_path / "sim.json").is_file()
    other = Scenario(mode="split", seed=5)
    assert SimCluster.open(tmp_path, other).scenario == other
    assert SimCluster.open(tmp_path).scenario == other


def test_status_json_shows_the_default_profile(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["status", "--json", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    state = json.loads(result.stdout)
    nodes = {n["name"]: n for n in state["nodes"]}
    for gx in ("gx10-a", "gx10-b"):
        assert [g["model"] for g in nodes[gx]["gpus"]] == ["GB10"]
        assert nodes[gx]["unified_memory"] is True
    ws_card = nodes["ws-1"]["gpus"][0]
    assert ws_card["sharing"]["mode"] == "mps"
    assert ws_card["clients"] == ["tts/0", "worker/0"]
    assert {m["name"] for m in state["modes"]} == {"split", "cluster"}
    assert state["active_mode"]["name"] == "cluster"
    assert [p["name"] for p in state["links"][0]["paths"]] == ["rail-0", "rail-1"]


def test_status_with_a_scenario_file_and_as_tables(tmp_path: Path) -> None:
    args = [
        "status",
        "--scenario",
        str(EVALS / "mps-double-count.yaml"),
        "--data-dir",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "ws-1" in result.stdout and "mps x2" in result.stdout and "2/1" in result.stdout


def test_status_refuses_a_bad_scenario_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: x\n")
    result = CliRunner().invoke(
        app, ["status", "--scenario", str(bad), "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "bad.yaml:1:1: seed" in result.output
    assert not (tmp_path / "sim.json").exists()


def test_bench_sim_prints_its_figures(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "sim", "--nodes", "20", "--runs", "5", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["gpus"] == 160 and figures["median_ms"] > 0 and figures["p99_ms"] > 0


def test_a_cluster_saved_in_an_older_format_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    SimCluster.from_scenario(steady("gx10", 20)).save(tmp_path)
    saved = tmp_path / "sim.json"
    data = json.loads(saved.read_text())
    data["format"] = 1  # the pooled serving model's
    saved.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["status", "--json", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "format 1" in result.output and "remove the file" in result.output
