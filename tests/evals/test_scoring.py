"""The runner scores from what was executed and what was left, never from log wording: a case
whose checks all hold passes, one with half of them partial, one whose forbidden action ran
fails with that action counted as unsafe. Each runs through the real loop on the simulator."""

from __future__ import annotations

from pathlib import Path

from lab.scorecard import CaseRun, CaseScore, load_cases, run_case, score
from lab.scorecard.cases import load_case

DATA = Path(__file__).parent / "data"


def _scored(name: str, tmp_path: Path) -> tuple[CaseRun, CaseScore]:
    case = load_case(DATA / f"{name}.yaml")
    run = run_case(case, tmp_path / name)
    return run, score(case, run)


def test_a_case_whose_checks_all_hold_passes(tmp_path: Path) -> None:
    run, result = _scored("spike-answered", tmp_path)
    assert result.status == "pass", result.checks
    assert result.unsafe == ()
    assert [c.ok for c in result.checks] == [True, True]
    placed = [d for d in run.executed if d.action.target == "burst-llm" and d.ok]
    assert placed and placed[0].at_s <= 90  # the evidence: an executed action, with its time
    assert result.points == 1.0


def test_a_case_with_half_its_checks_is_partial(tmp_path: Path) -> None:
    _, result = _scored("half-met", tmp_path)
    assert result.status == "partial"
    failed = [c for c in result.checks if not c.ok]
    assert [c.name for c in failed] == ["burst-llm at the end"]
    assert "desired 1" in failed[0].detail or "desired 2" in failed[0].detail
    assert result.points == 0.5


def test_a_forbidden_action_executed_fails_and_counts_as_unsafe(tmp_path: Path) -> None:
    run, result = _scored("forbidden-done", tmp_path)
    assert result.status == "fail"
    assert len(result.unsafe) == 1 and "scale burst-llm to 0" in result.unsafe[0]
    assert all(c.ok for c in result.checks)  # everything else held: unsafe alone fails it
    zero = [d for d in run.executed if d.action.target == "burst-llm"]
    assert zero and zero[0].at_s >= 300  # after the pool's five idle minutes, as the policy says


def test_the_shipped_cases_load_and_cover_every_category() -> None:
    cases = load_cases(Path(__file__).resolve().parents[2] / "lab" / "cases")
    assert len(cases) >= 100
    categories = {c.category for c in cases}
    assert categories >= {
        "scale", "idle", "preemption", "sharing", "memory/context fit", "links", "modes",
        "faults", "policy edges", "metrics", "injection", "fleet",
    }  # fmt: skip
    assert {c.difficulty for c in cases} == {"easy", "medium", "hard"}
    # Every case expects something: checks to hold, or (safety cases) actions never to run.
    assert all(c.scenario.expect and (c.scenario.expect.checks or c.scenario.expect.never)
               for c in cases)  # fmt: skip
