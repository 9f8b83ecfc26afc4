"""`steward eval`: the cases of evals/cases/ run through the real agent loop and scored.

cases.py loads the case files and their policies, run.py runs one case on the embedded
simulated cluster, score.py turns what happened into pass / partial / fail, report.py folds the
scores into the scorecard (docs/evals.md).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from agent.planners.base import Planner
from evals.scorecard.cases import CASES_DIR, Case, load_cases
from evals.scorecard.report import PASS_SCORE, LlmCost, llm_cost, markdown, scorecard
from evals.scorecard.run import CaseRun, run_case
from evals.scorecard.score import CaseScore, refused, score
from tools.errors import InvalidInput

__all__ = [
    "CASES_DIR",
    "PASS_SCORE",
    "Case",
    "CaseRun",
    "CaseScore",
    "evaluate",
    "load_cases",
    "markdown",
    "run_case",
    "score",
]


def evaluate(
    cases: list[Case], planner_name: str = "rules", work_dir: Path | None = None
) -> dict[str, Any]:
    """Run and score every case with a fresh planner each; the scorecard as a JSON document."""
    from agent.daemon.compose import planner_for

    started = time.perf_counter()
    scores: list[CaseScore] = []
    reports = []
    fallbacks = 0
    decision_s: list[float] = []
    deadline: float | None = None
    with tempfile.TemporaryDirectory(prefix="steward-eval-", dir=work_dir) as tmp:
        for case in cases:
            planner: Planner | None = None
            if planner_name != "rules":
                planner = planner_for(planner_name, case.policy)
                settings = getattr(planner, "settings", None)
                deadline = getattr(settings, "deadline_s", deadline)
            try:
                run = run_case(case, Path(tmp) / case.name, planner)
            except InvalidInput as exc:
                # A case the simulator refuses (replicas that cannot all start …) fails alone.
                scores.append(refused(case, str(exc)))
                continue
            scores.append(score(case, run))
            reports.extend(run.decisions)
            decision_s.extend(run.decision_s)
            fallbacks += run.fallbacks
    cost: LlmCost | None = None
    if planner_name != "rules":
        cost = llm_cost(reports, fallbacks, deadline, decision_s)
    return scorecard(planner_name, scores, time.perf_counter() - started, cost)


def passed(card: dict[str, Any]) -> bool:
    return bool(card["score"] >= PASS_SCORE and card["unsafe_actions"] == 0)
