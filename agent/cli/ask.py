"""`steward ask "<question>"`: a question answered by the model from the record, read-only.

The model sees the cluster now and the decision log through the read-only tools only
(agent/planners/llm/asker.py) and answers citing the decision ids it relies on; each cited id is
checked against the log. An answer that would change something comes back as a proposal
(agent/approvals/asked.py): the agent runs it through its graph like any decision — the policy
guard judges it, the decision log records it, and it waits in the approval queue under its
decision id (`steward approve ID`); a denied action says why. Nothing runs without an
approval. A running agent takes the proposal at its next tick; when none runs, `ask` does as
the agent would, in this process. Without a model
configured, `ask` says so and points to `steward status` and `steward audit explain`.
"""

from __future__ import annotations

import getpass
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    from agent.approvals.asked import AskedProposal
    from agent.audit import Intent
    from agent.daemon.config import StewardConfig
    from agent.daemon.runtime import Runtime
    from policies.history import History
    from policies.model import Policy
    from tools.actions import Action
    from tools.backends.parts import Parts

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
    from agent.approvals.asked import hand_over
    from agent.audit import AuditError, AuditLog
    from agent.daemon.compose import assess_settings, open_backend, open_policy
    from agent.daemon.logs import configure_logging
    from agent.planners.errors import PlannerFailed
    from agent.planners.llm.asker import Asker
    from agent.planners.llm.settings import LLMSettings
    from agent.planners.rule_settings import RulesSettings
    from agent.signals.assess import assess
    from agent.signals.memory import Memory
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
    finally:
        log.close()
    proposal: dict[str, Any] | None = None
    asked = answer.proposed(getpass.getuser(), "cli", state.observed_at)
    if asked is not None:
        hand_over(where, asked)
        proposal = _judged_by_the_agent(where, asked, opened.parts, policy, settings, history)
    doc = {
        "question": question,
        "answer": answer.text,
        "decision_ids": list(answer.decision_ids),
        "cited_found_in_log": known,
        "proposal": proposal,
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
    if proposal is not None:
        lines += _proposal_lines(proposal)
    lines.append(
        f"(model {answer.model}; read-only tools: {', '.join(answer.tools_called) or 'none'})"
    )
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _judged_by_the_agent(  # noqa: PLR0917 - the parts of one judgement
    where: Path,
    asked: AskedProposal,
    parts: Parts,
    policy: Policy,
    settings: StewardConfig,
    history: History,
) -> dict[str, Any]:
    """The proposal through the agent's graph: the guard's verdicts, the log, the approval
    inbox. A running agent takes it at its next tick; when none runs, this process does, as the
    agent would (agent/approvals/asked.py)."""
    from agent.approvals.asked import waits_for_a_person
    from agent.daemon.compose import assess_settings
    from agent.daemon.runtime import Runtime
    from agent.support import lockfile
    from agent.support.datadir import take_lock
    from policies.engine import judge
    from tools.actions import Plan
    from tools.errors import InvalidInput, StewardError

    approval_id = asked.decision_id
    try:
        lockfile.release(take_lock(where))
    except InvalidInput:
        # A running agent holds the data dir: it judges the proposal at its next tick.
        state = parts.cluster().observe()
        plan = Plan(actions=asked.actions, rationale=asked.rationale(), planner="llm")
        verdicts = [
            waits_for_a_person(v, policy, state)
            for v in judge(plan, state, policy, history).verdicts
        ]
        return {
            "approval_id": approval_id,
            "status": "handed_to_agent",
            "actions": [
                _shown(v.action, v.decision, v.rule_ids, v.message, v.approvers) for v in verdicts
            ],
            "approve_with": f"steward approve {approval_id}",
        }
    try:
        runtime = Runtime.open(where, parts, policy, thresholds=assess_settings(settings))
    except (InvalidInput, StewardError) as exc:
        fail(f"the proposal could not be judged: {exc}", EXIT_CHECK_FAILED)
    try:
        runtime.take_asked()
        intent = _proposed(runtime, approval_id)
        entry = runtime.ctx.inbox.get(approval_id)
    finally:
        runtime.close()
    shown = [
        _shown(p.action, p.verdict, p.rule_ids, p.message, p.approvers) for p in intent.proposals
    ]
    waiting = entry is not None and entry.status == "waiting"
    doc: dict[str, Any] = {
        "approval_id": approval_id,
        "status": "waiting" if waiting else "denied",
        "actions": shown,
    }
    if waiting:
        groups = [g for p in intent.proposals if p.verdict == "needs_approval" for g in p.approvers]
        claim = _claim(policy, groups)
        doc["approve_with"] = f"steward approve {approval_id}" + (f" --as {claim}" if claim else "")
    return doc


def _proposed(runtime: Runtime, decision_id: str) -> Intent:
    from agent.audit import Intent

    for record in runtime.ctx.audit.decision(decision_id):
        if isinstance(record.payload, Intent):
            return record.payload
    fail(f"the proposal {decision_id} left no record in the decision log", EXIT_CHECK_FAILED)


def _claim(policy: Policy, groups: Sequence[str]) -> str | None:
    """A name `steward approve --as` may answer under, when the OS user is in none of `groups`
    (the approver groups the guard named for the waiting actions)."""
    user = getpass.getuser()
    members = [
        m
        for g in dict.fromkeys(groups)
        if (group := policy.approvers.groups.get(g)) is not None
        for m in group.members
    ]
    return None if user in members or not members else members[0]


def _shown(
    action: Action, verdict: str, rule_ids: Sequence[str], message: str, approvers: Sequence[str]
) -> dict[str, Any]:
    return {
        "action": action.describe(),
        "verdict": verdict,
        "rule_ids": list(rule_ids),
        "message": message,
        "approvers": list(approvers),
    }


def _proposal_lines(proposal: dict[str, Any]) -> list[str]:
    approval_id = proposal["approval_id"]
    status = proposal["status"]
    lines = [f"proposed as decision {approval_id} — the policy guard's verdicts:"]
    lines += [f"  [{a['verdict']}] {a['action']} — {a['message']}" for a in proposal["actions"]]
    if status == "waiting":
        lines.append(
            f"nothing ran: it waits in the approval queue (`steward pending`); approve with "
            f"`{proposal['approve_with']}`, or `steward deny {approval_id} --reason WHY`"
        )
    elif status == "handed_to_agent":
        lines.append(
            "nothing ran: the running agent judges it again at its next tick and puts it in the "
            f"approval queue (`steward pending`); then `{proposal['approve_with']}`"
        )
    else:
        lines.append("nothing ran: the guard denied it (see the reasons above)")
    return lines


def register(app: typer.Typer) -> None:
    app.command("ask")(ask)
