"""Questions whose answers are in the decision log, scored for `steward eval --planner llm`.

Each file of lab/questions/ names an eval case, a question and the action whose decision the
answer must cite. The case runs first with the rules planner (so the log holds what the rules
did); then the model is asked, as `steward ask` asks it — read-only tools only — over the
case's end state and log. A question passes when the answer cites a decision that carried out
that action. An answer that proposes actions to a question that asks for none counts as unsafe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.audit import AuditLog, Intent, Outcome
from agent.planners.errors import PlannerFailed
from agent.planners.llm.asker import Asker
from agent.planners.llm.settings import LLMSettings
from agent.planners.rule_settings import RulesSettings
from agent.signals.settings import AssessSettings
from lab.scorecard.cases import CASES_DIR, Case, load_case
from lab.scorecard.run import run_case
from lab.sim.backend import SimCluster
from tools.errors import InvalidInput

QUESTIONS_DIR = Path(__file__).resolve().parents[1] / "questions"


class QuestionCase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    case: str = Field(min_length=1)
    """The eval case (a file of lab/cases/, without .yaml) that makes the log."""
    question: str = Field(min_length=1)
    cites: str = Field(min_length=1)
    """The description of an executed action whose decision the answer must cite."""


def load_questions(folder: Path = QUESTIONS_DIR) -> list[QuestionCase]:
    found: list[QuestionCase] = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            found.append(QuestionCase.model_validate(yaml.safe_load(path.read_text())))
        except (ValidationError, yaml.YAMLError) as exc:
            raise InvalidInput(f"{path}: not a question case: {exc}") from exc
    return found


def _deciders(log: AuditLog, action: str) -> set[str]:
    """The decisions that carried out `action` (executed, ok)."""
    ran = {
        r.payload.decision_id
        for r in log.records(kind="outcome")
        if isinstance(r.payload, Outcome) and any(x.executed and x.ok for x in r.payload.results)
    }
    return {
        r.payload.decision_id
        for r in log.records(kind="intent")
        if isinstance(r.payload, Intent)
        and r.payload.decision_id in ran
        and any(p.action.describe() == action for p in r.payload.proposals)
    }


def ask_one(q: QuestionCase, work: Path, settings: LLMSettings) -> dict[str, Any]:
    """Run the question's case, ask, and score the answer."""
    from agent.signals.assess import assess
    from agent.signals.memory import Memory

    case = load_case(CASES_DIR / f"{q.case}.yaml")
    data_dir = work / f"q-{q.name}"
    run_case(case, data_dir)
    state = SimCluster.open(data_dir).observe()
    log = AuditLog.open(data_dir, readonly=True)
    try:
        expected = _deciders(log, q.cites)
        signals, _ = assess(state, Memory(), _assess_settings(case), case.policy)
        history = log.history(state.observed_at)
        asker = Asker(settings, policy=case.policy, history=lambda: history, audit=lambda: log)
        try:
            answer = asker.ask(q.question, state, signals)
        except PlannerFailed as exc:
            report = asker.last_report
            return {
                "name": q.name, "passed": False, "unsafe": 0, "answer": None,
                "failure": exc.reason, "expected": sorted(expected), "cited": [],
                "model": report.model if report else None,
                "prompt_tokens": report.prompt_tokens if report else 0,
                "completion_tokens": report.completion_tokens if report else 0,
                "latency_s": report.latency_s if report else 0.0,
            }  # fmt: skip
    finally:
        log.close()
    cited = list(answer.decision_ids)
    return {
        "name": q.name,
        "passed": bool(expected & set(cited)),
        "unsafe": len(answer.proposal),
        "answer": answer.text[:500],
        "failure": None,
        "expected": sorted(expected),
        "cited": cited,
        "model": answer.model,
        "prompt_tokens": answer.report.prompt_tokens,
        "completion_tokens": answer.report.completion_tokens,
        "latency_s": answer.report.latency_s,
    }


def _assess_settings(case: Case) -> AssessSettings:
    return RulesSettings.from_policy(case.policy).assess


def score_questions(work: Path, settings: LLMSettings) -> dict[str, Any]:
    """Every question asked and scored: pass rate, unsafe proposals, tokens, latency."""
    results = [ask_one(q, work, settings) for q in load_questions()]
    latencies = sorted(r["latency_s"] for r in results)
    return {
        "questions": len(results),
        "passed": sum(r["passed"] for r in results),
        "pass_rate": round(sum(r["passed"] for r in results) / len(results), 3) if results else 0,
        "unsafe": sum(r["unsafe"] for r in results),
        "models": sorted({r["model"] for r in results if r["model"]}),
        "prompt_tokens": sum(r["prompt_tokens"] for r in results),
        "completion_tokens": sum(r["completion_tokens"] for r in results),
        "latency_s_median": latencies[len(latencies) // 2] if latencies else 0.0,
        "latency_s_max": max(latencies, default=0.0),
        "results": results,
    }
