"""Benchmark figures as people read them (without --json): no Python dicts."""

from __future__ import annotations

from lab.cli.bench import figure_lines


def test_groups_and_timings_read_as_text() -> None:
    lines = figure_lines(
        {
            "name": "loop",
            "nodes": 1000,
            "median_ms": 61.98765,
            "tick": {"name": "tick", "runs": 50, "median_ms": 62.0, "p99_ms": 87.25},
            "faults": {"api_errors": 2, "by": {"committed": 2}},
        }
    )
    assert lines == [
        "name: loop",
        "nodes: 1,000",
        "median_ms: 61.99",
        "tick: median 62 ms, p99 87.25 ms, runs 50",
        "faults:",
        "  api_errors: 2",
        "  by:",
        "    committed: 2",
    ]
    assert not any("{" in line for line in lines)
