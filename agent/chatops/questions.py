"""Questions in Slack (`@steward <question>`, `/steward ask <question>`), answered by the model.

The same read-only asker as `steward ask` (agent/planners/llm/asker.py), over the daemon's own
observation and decision log; the answer names the decision ids it relies on (each checked
against the log), and a proposed change is shown with the policy guard's verdicts — it runs
only through a decision the guard and approvals let through: it is handed to the agent
(agent/approvals/asked.py), whose next tick runs it through the graph as a decision of its
own — judged on a fresh observation, recorded, and waiting in the approval inbox, which the
sender posts to the channel with the Approve / Deny buttons of any approval. The reply names
its decision id; nothing runs without an approval. Without a model configured the
reply says so and points to `/steward status` and `/steward why ID`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agent.chatops.commands import Reply
from agent.planners.errors import PlannerFailed

if TYPE_CHECKING:
    from agent.approvals.asked import AskedProposal
    from agent.daemon.config import StewardConfig
    from agent.daemon.runtime import Runtime
    from policies.history import History
    from policies.model import Policy
    from tools.model import ClusterState

NO_MODEL = Reply(
    "no model is configured to answer questions (set llm.base_url or STEWARD_LLM_BASE_URL); "
    "`/steward status` shows the cluster and `/steward why ID` explains a decision",
    ephemeral=True,
)


def asker_for(config: StewardConfig, runtime: Runtime) -> Callable[[str, str], Reply]:
    """What answers a question in Slack for this daemon."""
    from agent.approvals.asked import hand_over
    from agent.planners.llm.asker import Asker
    from agent.planners.llm.settings import LLMSettings
    from agent.signals.assess import assess
    from agent.signals.memory import Memory

    settings = LLMSettings(**config.llm.model_dump(exclude_none=True))
    if not settings.base_url:
        return lambda question, user: NO_MODEL
    ctx = runtime.ctx
    asker = Asker(settings, policy=ctx.policy, history=ctx.recent_history, audit=lambda: ctx.audit)

    def answer(question: str, user: str) -> Reply:
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
        proposal = asked.proposed(user, "slack", state.observed_at)
        if proposal is not None:
            lines += _proposal_lines(proposal, state, ctx.history(state, ctx.memory), ctx.policy)
            hand_over(runtime.data_dir, proposal)
        return Reply(f"answer to: {question[:150]}", lines)

    return answer


def _proposal_lines(
    proposal: AskedProposal, state: ClusterState, history: History, policy: Policy
) -> list[str]:
    """What the reply says of a proposal: its decision id, the guard's verdicts now, and
    where it is answered."""
    from agent.approvals.asked import waits_for_a_person
    from policies.engine import judge
    from tools.actions import Plan

    plan = Plan(actions=proposal.actions, rationale=proposal.rationale(), planner="llm")
    verdicts = [
        waits_for_a_person(v, policy, state) for v in judge(plan, state, policy, history).verdicts
    ]
    lines = [f"proposed as decision {proposal.decision_id}; nothing ran. The guard's verdicts now:"]
    lines += [
        f"[{'denied' if v.decision == 'deny' else 'needs approval'}] {v.action.describe()} — "
        f"{v.message}"
        for v in verdicts
    ]
    if all(v.decision == "deny" for v in verdicts):
        lines.append("the guard denies it: nothing of it will run (the decision log keeps why)")
    else:
        lines.append(
            f"the agent judges it again at its next tick and posts {proposal.decision_id} here "
            f"with Approve / Deny buttons (or `/steward approve {proposal.decision_id}`)"
        )
    return lines
