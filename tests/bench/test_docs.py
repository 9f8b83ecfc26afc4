"""docs/benchmarks.md's results are what the kept result files say (regenerate, never edit)."""

from __future__ import annotations

from lab.bench.trace.docs import PAGE, RESULTS, rewritten


def test_the_page_is_generated_from_the_result_files() -> None:
    page = PAGE.read_text()
    assert rewritten(page) == page, "run: python -m lab.bench.trace.docs"


def test_every_result_file_names_its_commit_and_setup() -> None:
    import json

    for path in RESULTS.glob("*.json"):
        setup = json.loads(path.read_text())["setup"]
        assert setup["commit"] not in ("", "unknown"), path
        assert setup["test_seeds"] and setup["train"]["seed"] not in setup["test_seeds"], path
