"""`steward fit`, `steward place` and `steward bench place` as a script sees them: one JSON
document on stdout, exit 0 ok, 1 a check failed (does not fit, nothing fits), 2 bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent.cli.app import app


def _run(*args: str) -> tuple[int, Any, str]:
    result = CliRunner().invoke(app, list(args))
    out = json.loads(result.stdout) if "--json" in args and result.stdout.strip() else None
    return result.exit_code, out, result.stderr


def test_fit_list_prints_the_catalogue_as_a_json_list() -> None:
    code, models, _ = _run("fit", "--list", "--json")
    assert code == 0
    by_name = {m["name"]: m for m in models}
    assert {"deepseek-v4-flash", "qwen3.5-122b-a10b", "glm-5.3-flash", "hy3-295b"} <= set(by_name)
    hy3 = by_name["hy3-295b"]
    assert hy3["weight_bytes"] == round(295e9 * 4.5 / 8)
    assert hy3["kv_bytes_per_token"] == 2 * 64 * 8 * 128 * 2


def test_fit_reports_the_largest_context_and_the_breakdown() -> None:
    code, report, _ = _run(
        "fit", "--model", "deepseek-v4-flash", "--context-length", "65536", "--json"
    )
    assert code == 0
    assert report["fits"] is True
    assert report["largest_context"] == 524_288
    need = report["need_per_node"]
    assert need["total_bytes"] == sum(v for k, v in need.items() if k != "total_bytes")


def test_fit_exits_1_when_it_does_not_fit_and_0_in_cluster_mode() -> None:
    code, report, _ = _run(
        "fit", "--model", "glm-5.3-flash", "--context-length", "1048576", "--json"
    )
    assert code == 1
    assert report["fits"] is False and report["reasons"]
    code, report, _ = _run(
        "fit",
        "--model",
        "glm-5.3-flash",
        "--context-length",
        "1048576",
        "--mode",
        "cluster",
        "--json",
    )
    assert code == 0
    assert report["largest_context"] == 1_048_576


def test_fit_with_an_unknown_model_is_bad_input(tmp_path: Path) -> None:
    code, _, err = _run("fit", "--model", "gpt-9", "--context-length", "1024")
    assert code == 2
    assert "known: deepseek-v4-flash" in err
    code, _, err = _run(
        "fit", "--model", "x", "--context-length", "1", "--catalog", str(tmp_path / "n")
    )
    assert code == 2
    assert "cannot read the model catalogue" in err


def test_fit_reads_a_user_catalogue(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        "models:\n  small:\n    params_total_b: 7\n    bits_per_weight: 8\n    layers: 28\n"
        "    kv_heads: 4\n    head_dim: 128\n    max_context: 131072\n"
    )
    code, report, _ = _run(
        "fit", "--model", "small", "--context-length", "131072", "--catalog", str(mine), "--json"
    )
    assert code == 0
    assert report["largest_context"] == 131_072


def test_place_ranks_the_simulated_homelab(tmp_path: Path) -> None:
    # The homelab at rest (the built-in day starts with render-1 busy rendering).
    scenario = tmp_path / "homelab.yaml"
    scenario.write_text("name: homelab\n")
    code, placement, _ = _run(
        "place", "burst-llm", "--scenario", str(scenario), "--data-dir", str(tmp_path / "d"),
        "--json",
    )  # fmt: skip
    assert code == 0
    best = placement["candidates"][0]
    assert best["nodes"] == ["render-1"]
    assert best["reasons"]
    rejected = {tuple(r["nodes"]) for r in placement["rejected"]}
    assert ("gx10-a",) in rejected


def test_place_explains_the_double_count_of_a_scenario(tmp_path: Path) -> None:
    scenario = tmp_path / "double-count.yaml"
    scenario.write_text("name: double-count\nfaults:\n  - kind: mps_double_count\n    node: ws-1\n")
    code, placement, _ = _run(
        "place", "tts", "--data-dir", str(tmp_path / "d"), "--scenario", str(scenario), "--json"
    )
    assert code == 1  # both MPS slots are taken by tts and worker
    [anomaly] = placement["anomalies"]
    assert anomaly["kind"] == "mps_double_count"
    assert "replicas: 2" in anomaly["fix"]


def test_place_an_unknown_workload_is_bad_input(tmp_path: Path) -> None:
    code, _, err = _run("place", "nope", "--data-dir", str(tmp_path))
    assert code == 2
    assert "known: beast" in err


def test_bench_place_prints_its_figures() -> None:
    code, figures, _ = _run(
        "bench", "place", "--nodes", "40", "--replicas", "10", "--runs", "3", "--json"
    )
    assert code == 0
    assert figures["replicas_placed"] == 10
    assert figures["median_ms"] > 0 and figures["p99_ms"] >= figures["median_ms"]


def test_fit_on_live_nodes_counts_what_runs_there(tmp_path: Path) -> None:
    # The simulated homelab starts in cluster mode: the big model holds both GX10.
    code, report, _ = _run(
        "fit", "--model", "qwen3-32b", "--context-length", "8192", "--node", "gx10-a",
        "--data-dir", str(tmp_path), "--json",
    )  # fmt: skip
    assert code == 1
    assert report["host"] == "gx10-a"
    assert "in use (measured)" in report["budget_per_node"]["source"]
    code, _, err = _run("fit", "--model", "qwen3-32b", "--context-length", "8192", "--node", "nope",
                        "--data-dir", str(tmp_path))  # fmt: skip
    assert code == 2
    assert "not in the cluster" in err
