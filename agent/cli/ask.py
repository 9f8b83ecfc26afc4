"""`steward ask "<question>"`: a question answered by the model from the record, read-only.

The model sees the cluster now and the decision log through the read-only tools only
(agent/planners/llm/asker.py) and answers citing the decision ids it relies on; each cited id is
checked against the log. An answer that would change something comes back as a proposal: the
policy guard judges it on this observation, and it is recorded as a dry-run plan (planner llm)
whose actions that need approval say who may give it — nothing runs. Without a model
configured, `ask` says so and points to `steward status` and `steward audit explain`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from agent.cli.common import (
    EXIT_CHECK_FAILED,
    ContextOpt,
    DataDirOpt,
    JsonOpt,
    KubeconfigOpt,
    config,
    console,
    data_dir,
    emit_json,
    fail,
)

NO_MODEL = (
    "steward ask needs a model, and none is configured: set llm.base_url in steward.yaml or "
    "STEWARD_LLM_BASE_URL (any OpenAI-compatible endpoint). Meanwhile `steward status` shows the "
    "cluster now, and `steward audit show` then `steward audit explain ID` tell why each "
    "decision was made."
)


def ask(
    question: Annotated[str, typer.Argument(help="The question, in quotes.")],
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
    kubeconfig: KubeconfigOpt = None,
    kube_context: ContextOpt = None,
) -> None:
    """Ask about the cluster and its decisions; the model answers with read-only tools only."""
    from agent.audit import AuditError, AuditLog, DryRunPlan, proposals
    from agent.daemon.compose import assess_settings, open_backend, open_policy
    from agent.daemon.logs import configure_logging
    from agent.planners.errors import PlannerFailed
    from agent.planners.llm.asker import Asker
    from agent.planners.llm.settings import LLMSettings
    from agent.planners.rule_settings import RulesSettings
    from agent.signals.assess import assess
    from agent.signals.memory import Memory
    from policies.engine import judge
    from tools.actions import Plan
    from tools.errors import StewardError

    configure_logging()
    if not question.strip():
        fail('steward ask: give the question in quotes, e.g. steward ask "why is render at zero?"')
    settings = config()
    llm = settings.llm.model_dump(exclude_none=True)
    try:
        model = LLMSettings(**llm)
    except ValueError as exc:
        fail(f"LLM settings: {exc}")
    if not model.base_url:
        fail(NO_MODEL)
    where = data_dir(data_dir_opt)
    try:
        opened = open_backend(settings, where)
        policy, _ = open_policy(settings.policy)
        state = opened.parts.cluster().observe()
        log = AuditLog.open(where, readonly=True)
    except (StewardError, AuditError) as exc:
        fail(str(exc))
    try:
        thresholds = RulesSettings.from_policy(policy, assess_settings(settings)).assess
        signals, _ = assess(state, Memory(), thresholds, policy)
        history = log.history(state.observed_at)
        asker = Asker(model, policy=policy, history=lambda: history, audit=lambda: log)
        try:
            answer = asker.ask(question, state, signals)
        except PlannerFailed as exc:
            fail(f"the model gave no answer: {exc.reason}", EXIT_CHECK_FAILED)
        known = {c: bool(log.decision(c)) for c in answer.decision_ids}
        judged: list[dict[str, Any]] = []
        if answer.proposal:
            plan = Plan(
                actions=answer.proposal, rationale=f"asked: {question[:300]}", planner="llm"
            )
            verdicts = judge(plan, state, policy, history).verdicts
            judged = [
                {
                    "action": v.action.describe(),
                    "verdict": v.decision,
                    "rule_ids": list(v.rule_ids),
                    "message": v.message,
                }
                for v in verdicts
            ]
            proposed = DryRunPlan(
                observed_at=state.observed_at,
                observation_digest=state.digest(),
                planner="llm",
                model=answer.model,
                rationale=plan.rationale,
                proposals=proposals(plan, verdicts),
            )
    finally:
        log.close()
    recorded = _record(where, proposed) if answer.proposal else None
    doc = {
        "question": question,
        "answer": answer.text,
        "decision_ids": list(answer.decision_ids),
        "cited_found_in_log": known,
        "proposal": judged,
        "proposal_recorded_as": recorded,
        "model": answer.model,
        "tools_called": list(answer.tools_called),
        "prompt_tokens": answer.report.prompt_tokens,
        "completion_tokens": answer.report.completion_tokens,
        "latency_s": answer.report.latency_s,
    }
    if json_out:
        emit_json(doc)
        return
    lines = [answer.text, ""]
    for decision_id, found in known.items():
        tail = "" if found else " (not in the log: the model cited an id that does not exist)"
        lines.append(f"relies on: {decision_id}{tail} — steward audit explain {decision_id}")
    if judged:
        lines.append("proposed (nothing ran; the policy guard's verdicts on this observation):")
        lines += [f"  [{j['verdict']}] {j['action']} — {j['message']}" for j in judged]
        if recorded:
            lines.append(f"  recorded as dry-run plan {recorded}")
    lines.append(
        f"(model {answer.model}; read-only tools: {', '.join(answer.tools_called) or 'none'})"
    )
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _record(where: Any, proposed: Any) -> str | None:
    """The proposal into the log as a dry-run plan, when no agent holds the log's pen."""
    from agent.audit import AuditError, AuditLog
    from tools.errors import StewardError

    try:
        with AuditLog.open(where) as log:
            log.append(proposed)
    except (AuditError, StewardError, OSError):
        return None  # a running agent holds the log's pen: the proposal is shown, not kept
    decision_id: str = proposed.decision_id
    return decision_id


def register(app: typer.Typer) -> None:
    app.command("ask")(ask)
