"""Questions in Slack (`@steward <question>`, `/steward ask <question>`), answered by the model.

The same read-only asker as `steward ask` (agent/planners/llm/asker.py), over the daemon's own
observation and decision log; the answer names the decision ids it relies on (each checked
against the log), and a proposed change is shown with the policy guard's verdicts — it runs
only through a decision the guard and approvals let through. Without a model configured the
reply says so and points to `/steward status` and `/steward why ID`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.chatops.commands import Reply
from agent.planners.errors import PlannerFailed

if TYPE_CHECKING:
    from agent.daemon.config import StewardConfig
    from agent.daemon.runtime import Runtime

NO_MODEL = Reply(
    "no model is configured to answer questions (set llm.base_url or STEWARD_LLM_BASE_URL); "
    "`/steward status` shows the cluster and `/steward why ID` explains a decision",
    ephemeral=True,
)


def asker_for(config: StewardConfig, runtime: Runtime) -> Callable[[str], Reply]:
    """What answers a question in Slack for this daemon."""
    from agent.planners.llm.asker import Asker
    from agent.planners.llm.settings import LLMSettings
    from agent.signals.assess import assess
    from agent.signals.memory import Memory
    from policies.engine import judge
    from tools.actions import Plan

    settings = LLMSettings(**config.llm.model_dump(exclude_none=True))
    if not settings.base_url:
        return lambda question: NO_MODEL
    ctx = runtime.ctx
    asker = Asker(settings, policy=ctx.policy, history=ctx.recent_history, audit=lambda: ctx.audit)

    def answer(question: str) -> Reply:
        state = ctx.cluster.observe()
        signals, _ = assess(state, Memory(), ctx.settings.assess, ctx.policy)
        try:
            asked = asker.ask(question, state, signals)
        except PlannerFailed as exc:
            return Reply(f"no answer from the model: {exc.reason}", ephemeral=True)
        lines = [asked.text]
        for decision_id in asked.decision_ids:
            found = bool(ctx.audit.decision(decision_id))
            lines.append(f"relies on {decision_id}" + ("" if found else " (not in the log)"))
        if asked.proposal:
            plan = Plan(actions=asked.proposal, rationale=question[:300], planner="llm")
            history = ctx.history(state, ctx.memory)
            lines.append("proposed, nothing ran (the guard's verdicts now):")
            lines += [
                f"[{v.decision}] {v.action.describe()} — {v.message}"
                for v in judge(plan, state, ctx.policy, history).verdicts
            ]
        return Reply(f"answer to: {question[:150]}", lines)

    return answer
