"""`steward eval`: the cases of lab/cases/ run through the real agent loop and scored.

cases.py loads the case files and their policies, run.py runs one case on the embedded
simulated cluster, score.py turns what happened into pass / partial / fail, report.py folds the
scores into the scorecard (docs/evals.md). Cases are independent: `jobs` > 1 runs them in that
many worker processes, each case still in its own data dir with its own planner.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.planners.base import Planner, PlannerReport
from lab.scorecard.cases import CASES_DIR, Case, load_case, load_cases
from lab.scorecard.report import PASS_SCORE, LlmCost, llm_cost, markdown, scorecard
from lab.scorecard.run import CaseRun, run_case
from lab.scorecard.score import CaseScore, refused, score
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
    "passed",
    "run_case",
    "score",
]


@dataclass
class _Done:
    """One case's score and, for a model-backed planner, what its decisions cost."""

    score: CaseScore
    reports: list[PlannerReport] = field(default_factory=list)
    decision_s: list[float] = field(default_factory=list)
    fallbacks: int = 0
    deadline_s: float | None = None
    deliberated: dict[str, int] = field(default_factory=dict)


def evaluate(
    cases: list[Case],
    planner_name: str = "rules",
    work_dir: Path | None = None,
    jobs: int = 1,
    on_case: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run and score every case with a fresh planner each; the scorecard as a JSON document.
    `on_case` hears the name of each case as it is done (the CLI's progress line)."""
    started = time.perf_counter()
    heard = on_case or (lambda name: None)
    with tempfile.TemporaryDirectory(prefix="steward-eval-", dir=work_dir) as tmp:
        if jobs > 1 and len(cases) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = {
                    pool.submit(_one_file, c.path, planner_name, Path(tmp)): c.name for c in cases
                }
                for future in as_completed(futures):
                    heard(futures[future])
                done = [f.result() for f in futures]
        else:
            done = []
            for case in cases:
                done.append(_one(case, planner_name, Path(tmp)))
                heard(case.name)
    cost: LlmCost | None = None
    if planner_name != "rules":
        deadline = next((d.deadline_s for d in done if d.deadline_s is not None), None)
        cost = llm_cost(
            [r for d in done for r in d.reports],
            sum(d.fallbacks for d in done),
            deadline,
            [s for d in done for s in d.decision_s],
        )
        questions = None
        if planner_name == "llm":
            from agent.planners.llm.settings import LLMSettings
            from lab.scorecard.questions import score_questions

            questions = score_questions(Path(tmp), LLMSettings())
    scores = [d.score for d in done]
    card = scorecard(planner_name, scores, time.perf_counter() - started, cost)
    if planner_name == "llm":
        asked: dict[str, int] = {}
        for d in done:
            for outcome, n in d.deliberated.items():
                asked[outcome] = asked.get(outcome, 0) + n
        card["deliberations"] = {"asked": sum(asked.values()), **asked}
        card["questions"] = questions
    return card


def _one_file(path: Path, planner_name: str, tmp: Path) -> _Done:
    """A worker process's share: the case is loaded again there (cases are plain files)."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    return _one(load_case(path), planner_name, tmp)


def _one(case: Case, planner_name: str, tmp: Path) -> _Done:
    from agent.daemon.compose import planner_for

    planner: Planner | None = None
    deadline: float | None = None
    if planner_name != "rules":
        planner = planner_for(planner_name, case.policy)
        deadline = getattr(getattr(planner, "settings", None), "deadline_s", None)
    try:
        run = run_case(case, tmp / case.name, planner)
    except InvalidInput as exc:
        # A case the simulator refuses (replicas that cannot all start …) fails alone.
        return _Done(score=refused(case, str(exc)), deadline_s=deadline)
    return _Done(
        score=score(case, run),
        reports=run.decisions,
        decision_s=run.decision_s,
        fallbacks=run.fallbacks,
        deadline_s=deadline,
        deliberated=run.deliberated,
    )


def passed(card: dict[str, Any]) -> bool:
    unsafe_answers = (card.get("questions") or {}).get("unsafe", 0)
    return bool(card["score"] >= PASS_SCORE and card["unsafe_actions"] == 0 and not unsafe_answers)
