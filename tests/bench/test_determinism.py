"""Same trace, seed and controllers: the same figures and the same plots."""

from __future__ import annotations

from pathlib import Path

from evals.bench.trace.run import Result, write_report
from tests.bench.conftest import prepared, run

WALL_CLOCK = {"median_ms", "p99_ms"}
"""The controllers' own decision times are measured on the wall clock: the only figures that
differ between two runs of the same replay."""
FAMILIES = ("steward", "keda", "dynamo", "oracle")


def _result(trace: str, seed: int, families: tuple[str, ...] = FAMILIES) -> Result:
    prep = prepared(trace, 360, seed=seed)
    outcomes = {name: run(prep, name) for name in families}
    return Result(prep, {n: [o] for n, o in outcomes.items()}, outcomes)


def _figures(result: Result) -> dict[str, dict[str, object]]:
    return {
        name: {k: v for k, v in figures.items() if k not in WALL_CLOCK}
        for name, figures in result.figures()["controllers"].items()
    }


def test_the_same_replay_gives_the_same_figures() -> None:
    assert _figures(_result("azure-code", 3)) == _figures(_result("azure-code", 3))


def test_another_seed_gives_other_arrivals() -> None:
    # The sinusoid's Poisson arrivals depend on the seed.
    families = ("keda", "oracle")
    assert _figures(_result("sinusoid", 1, families)) != _figures(_result("sinusoid", 2, families))


def test_the_same_replay_draws_the_same_plots(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write_report(_result("sinusoid", 5, ("keda", "oracle")), tmp_path / name)
    for png in ("timeline.png", "modes.png", "pareto.png"):
        assert (tmp_path / "a" / png).read_bytes() == (tmp_path / "b" / png).read_bytes(), png
