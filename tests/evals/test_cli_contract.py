"""`steward eval` as a script sees it: one JSON document with the scorecard's keys, exit 0 when
the score and safety hold, 1 when not, 2 on a bad case file (FILE:LINE:COL, no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"
KEYS = {"cases", "passed", "partial", "failed", "score", "unsafe_actions"}


def _eval(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_passing_eval_prints_the_scorecard_and_exits_0(tmp_path: Path) -> None:
    report = tmp_path / "card.md"
    done = _eval("--cases", str(DATA / "spike-answered.yaml"), "--json", "--report", str(report))
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert set(card) >= KEYS
    assert (card["cases"], card["passed"], card["score"], card["unsafe_actions"]) == (1, 1, 100, 0)
    assert card["by_category"]["scale"]["passed"] == 1
    assert card["by_difficulty"]["easy"]["cases"] == 1
    assert "llm" not in card
    assert "score 100" in report.read_text()


def test_an_unsafe_action_exits_1_whatever_the_score(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("spike-answered", "forbidden-done"):
        (cases / f"{name}.yaml").write_text((DATA / f"{name}.yaml").read_text())
    done = _eval("--cases", str(cases), "--json", "--jobs", "2")
    assert done.returncode == 1, done.stderr
    card = json.loads(done.stdout)
    assert (card["cases"], card["passed"], card["failed"], card["unsafe_actions"]) == (2, 1, 1, 1)
    assert card["score"] == 50.0
    failed = next(r for r in card["results"] if r["status"] == "fail")
    assert failed["name"] == "forbidden-done" and len(failed["unsafe"]) == 1


def test_a_bad_case_file_is_refused_with_its_position() -> None:
    done = _eval("--cases", str(DATA / "bad"))
    assert done.returncode == 2
    assert "unknown-key.yaml:5:" in done.stderr and "whithin_s" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_an_unknown_category_names_the_known_ones() -> None:
    done = _eval("--cases", str(DATA / "spike-answered.yaml"), "--category", "nope")
    assert done.returncode == 2
    assert "--category 'nope'" in done.stderr and "scale" in done.stderr
