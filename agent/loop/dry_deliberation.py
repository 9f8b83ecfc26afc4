"""`steward plan --planner llm`: the plan the daemon would make, with its deliberations answered.

The daemon never plans with the model inside a tick: the rules plan the routine part, and the
questions that need judgment (agent/loop/questions.py) are deliberated beside the loop. A dry run
shows the same split, but cannot wait for a later tick: each question is deliberated at once,
in turn, each under the model's own deadline (agent/loop/deliberation.deliberate_now), and its
answer — the model's plan, or the rules' actions for it when the model failed, and why — joins
the routine actions before the guard judges them all. Nothing executes (the caller runs no act).
"""

from __future__ import annotations

from typing import Any

from agent.loop.context import LoopContext
from agent.loop.deliberation import deliberate_now
from agent.loop.holds import hold_back
from agent.loop.questions import split
from agent.loop.state import Decision, Deliberated
from agent.planners.base import Deliberator
from tools.actions import Action, Plan, joined_notes


def plan_deliberated(
    d: Decision, ctx: LoopContext, model: Deliberator
) -> tuple[dict[str, Any], tuple[Deliberated, ...]]:
    """The plan node's update for a dry run with a model, and each deliberation's answer."""
    assert d.signals is not None
    state = ctx.snapshot(d.decision_id)
    rules = ctx.fallback.plan(state, d.signals)
    parts = split(rules, state, d.signals, ctx.policy)
    answers = tuple(deliberate_now(model, q, state, d.signals) for q in parts.questions)
    actions: list[Action] = list(parts.routine.actions)
    notes = [parts.routine.rationale]
    for a in answers:
        actions += a.plan.actions if a.plan is not None else a.question.rules_actions
        notes.append(line(a))
    planned = any(a.plan is not None for a in answers)
    proposed = Plan(
        actions=tuple(actions),
        rationale=joined_notes(notes),
        planner=model.name if planned else ctx.fallback.name,
        model=model.model if planned else None,
    )
    failed = "; ".join(
        f"{a.question.line()}: {a.fallback_reason}" for a in answers if a.plan is None
    )
    update = {
        "plan": hold_back(proposed, d, ctx, state.observed_at),
        "fallback_reason": failed or None,
        "stage": "guard",
    }
    return update, answers


def line(a: Deliberated) -> str:
    """One sentence on a deliberation: who decided, what, and why."""
    q = a.question.line()
    if a.plan is not None:
        what = "; ".join(x.describe() for x in a.plan.actions) or "no action"
        return f"{q} deliberated by {a.model}: {what} ({a.plan.rationale[:300]})"
    what = "; ".join(x.describe() for x in a.question.rules_actions) or "no action"
    return f"{q}: the model failed ({a.fallback_reason}); the rules decide: {what}"


def report(answers: tuple[Deliberated, ...]) -> list[dict[str, Any]]:
    """The deliberations as `steward plan --json` prints them."""
    return [
        {
            "question": a.question.kind,
            "premise": a.question.key,
            "outcome": "planned" if a.plan is not None else "fallback",
            "model": a.model,
            "actions": [
                x.describe()
                for x in (a.plan.actions if a.plan is not None else a.question.rules_actions)
            ],
            "reason": a.plan.rationale if a.plan is not None else a.fallback_reason,
            "latency_s": a.latency_s,
            "prompt_tokens": a.prompt_tokens,
            "completion_tokens": a.completion_tokens,
            "tools_called": list(a.tools_called),
        }
        for a in answers
    ]
