"""Reading the log back for people and tools: one-line summaries, "why?" explanations, JSONL export.

A decision is spread over several records (intent, fallback, approvals, outcome or interrupted);
`explain` gathers them into one `Explanation` — what was seen, what was proposed, which rules
allowed or denied each action, who approved, what happened — and `render` tells it in plain text.
`export_row` flattens every record into one JSON object with the decision's actions joined to
their verdicts and results, for tools that read JSON Lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from agent.audit.records import (
    ApprovalRecord,
    DeliberationRecord,
    DryRunPlan,
    Execution,
    Fallback,
    FindingChange,
    Intent,
    Interrupted,
    ModeStep,
    Outcome,
    Proposal,
    Record,
    Startup,
)
from policies.judgement import Decision
from tools.actions import dump_action, parse_action
from tools.results import Check

Status = Literal[
    "completed", "failed", "interrupted", "in progress", "waiting for approval", "dry run"
]


class ActionExplanation(BaseModel):
    """One proposed action, its verdict, its approval and what became of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    type: str
    target: str
    params: dict[str, JsonValue]
    description: str
    reason: str
    verdict: Decision
    rule_ids: tuple[str, ...]
    message: str
    approvers: tuple[str, ...] = ()
    """Groups whose members may approve it (an action that needs approval)."""
    approvals: tuple[str, ...] = ()
    at_execution: str | None = None
    """The guard's word when the decision came to act: allowed, or refused and by what."""
    refused_at_execution: bool = False
    executed: bool = False
    ok: bool | None = None
    outcome: str | None = None


class Explanation(BaseModel):
    """One decision told whole."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str
    seq: int
    time: datetime
    status: Status
    observed_at: datetime
    observation_digest: str
    signals: dict[str, JsonValue]
    planner: str
    model: str | None
    fallbacks: tuple[str, ...]
    rationale: str
    findings: tuple[str, ...]
    actions: tuple[ActionExplanation, ...]
    verification: tuple[Check, ...] = ()
    mode_steps: tuple[str, ...] = ()
    """The mode rotation's journal steps, when the decision rotated a mode."""
    deliberations: tuple[str, ...] = ()
    """The model's deliberation behind the plan, when the plan came from one."""
    error: str | None = None
    closed_at: datetime | None = None


def _params(action_dump: dict[str, Any]) -> dict[str, JsonValue]:
    return {k: v for k, v in action_dump.items() if k not in ("type", "reason")}


class _Trail:
    """What the records after an intent add to it: approvals, fallbacks, steps, the ending."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.approvals: dict[int, list[str]] = {}
        self.fallbacks: list[str] = []
        self.steps: list[str] = []
        self.deliberations: list[str] = []
        self.outcome: Outcome | None = None
        self.closed: Record | None = None
        self.execution: Execution | None = None
        for r in records:
            p = r.payload
            if isinstance(p, Execution):
                self.execution = p
            elif isinstance(p, ApprovalRecord):
                word = "approved" if p.approved else "refused"
                note = f" ({p.note})" if p.note else ""
                when = f"{p.decided_at:%Y-%m-%d %H:%M}"
                text = f"{word} by {p.principal} via {p.channel} at {when}{note}"
                self.approvals.setdefault(p.action_index, []).append(text)
            elif isinstance(p, Fallback):
                self.fallbacks.append(
                    f"{p.from_planner} failed ({p.reason}); {p.to_planner} decided"
                )
            elif isinstance(p, ModeStep):
                mode = f" to {p.target_mode}" if p.target_mode else ""
                self.steps.append(
                    f"rotation {p.rotation_id}{mode}: {p.step} {p.status} ({r.time:%H:%M:%S})"
                )
            elif isinstance(p, DeliberationRecord):
                self.deliberations.append(deliberation_line(p))
            elif isinstance(p, Outcome | Interrupted):
                self.outcome = p if isinstance(p, Outcome) else None
                self.closed = r

    def status(self, decision: Intent | DryRunPlan) -> Status:
        if isinstance(decision, DryRunPlan):
            return "dry run"
        if self.closed is None:
            waits = decision.approvals_pending and not self.approvals and self.execution is None
            return "waiting for approval" if waits else "in progress"
        if self.outcome is None:
            return "interrupted"
        return "completed" if self.outcome.succeeded else "failed"

    def error(self) -> str | None:
        if self.outcome is not None:
            return self.outcome.error
        if self.closed is not None and isinstance(self.closed.payload, Interrupted):
            return self.closed.payload.reason
        return None


def _action_explanation(i: int, proposal: Proposal, trail: _Trail) -> ActionExplanation:
    dumped = dump_action(proposal.action)
    results = trail.outcome.results if trail.outcome else ()
    res = next((r for r in results if r.index == i), None)
    gate = trail.execution
    judged = next((v for v in gate.verdicts if v.index == i), None) if gate else None
    at_execution = None
    if gate is not None and judged is not None:
        seen = f"on the cluster as observed at {gate.observed_at:%Y-%m-%d %H:%M:%S}"
        rules = ", ".join(judged.rule_ids) or "no rule"
        word = "allowed" if judged.verdict == "allow" else "refused"
        at_execution = f"{word} at execution by {rules} {seen}: {judged.message}".rstrip(": ")
    return ActionExplanation(
        index=i,
        type=str(dumped["type"]),
        target=proposal.action.target,
        params=_params(dumped),
        description=proposal.action.describe(),
        reason=proposal.action.reason,
        verdict=proposal.verdict,
        rule_ids=proposal.rule_ids,
        message=proposal.message,
        approvers=proposal.approvers,
        approvals=tuple(trail.approvals.get(i, ())),
        at_execution=at_execution,
        refused_at_execution=bool(judged and judged.refused_at_execution),
        executed=res.executed if res else False,
        ok=res.ok if res else None,
        outcome=res.message if res else None,
    )


def explain(records: Sequence[Record]) -> Explanation:
    """What the decision these records belong to saw, planned, judged and did (the records must
    include its intent or plan)."""
    opening = next((r for r in records if isinstance(r.payload, Intent | DryRunPlan)), None)
    if opening is None:
        raise ValueError("no intent or plan among these records: nothing to explain")
    decision = opening.payload
    assert isinstance(decision, Intent | DryRunPlan)
    trail = _Trail(records)
    return Explanation(
        decision_id=decision.decision_id,
        seq=opening.seq,
        time=opening.time,
        status=trail.status(decision),
        observed_at=decision.observed_at,
        observation_digest=decision.observation_digest,
        signals=decision.signals,
        planner=decision.planner,
        model=decision.model,
        fallbacks=tuple(trail.fallbacks),
        rationale=decision.rationale,
        findings=decision.findings,
        actions=tuple(_action_explanation(i, p, trail) for i, p in enumerate(decision.proposals)),
        verification=trail.outcome.verification if trail.outcome else (),
        mode_steps=tuple(trail.steps),
        deliberations=tuple(trail.deliberations),
        error=trail.error(),
        closed_at=trail.closed.time if trail.closed else None,
    )


def render(explanation: Explanation) -> str:
    """The explanation as text a person reads top to bottom."""
    by = explanation.planner + (f" (model {explanation.model})" if explanation.model else "")
    lines = [
        f"Decision {explanation.decision_id} — {explanation.status} "
        f"(seq {explanation.seq}, {explanation.time:%Y-%m-%d %H:%M:%S} UTC)",
        "",
        f"Seen: the cluster as observed at {explanation.observed_at:%Y-%m-%d %H:%M:%S} "
        f"(digest {explanation.observation_digest[:12]}).",
        *_signal_lines(explanation.signals),
        f"Planned by: {by}.",
        *(f"Fallback: {f}." for f in explanation.fallbacks),
        *(f"Deliberated: {d}" for d in explanation.deliberations),
    ]
    if explanation.rationale:
        lines.append(f"Why: {explanation.rationale}")
    lines += ["", "Proposed:" if explanation.actions else "Proposed: nothing."]
    for a in explanation.actions:
        rules = ", ".join(a.rule_ids) or "no rule"
        verdict = {"allow": "allowed", "deny": "denied", "needs_approval": "needs approval"}
        lines.append(f"  {a.index + 1}. {a.description} — {verdict[a.verdict]} by {rules}")
        if a.reason:
            lines.append(f"     planner's reason: {a.reason}")
        if a.message:
            lines.append(f"     policy: {a.message}")
        lines += [f"     {text}" for text in a.approvals]
        if a.verdict == "needs_approval" and not a.approvals:
            who = f" (may approve: {', '.join(a.approvers)})" if a.approvers else ""
            lines.append(f"     no approval recorded{who}")
        if a.at_execution:
            lines.append(f"     {a.at_execution}")
        if a.executed:
            lines.append(f"     ran: {'ok' if a.ok else 'FAILED'} — {a.outcome or 'no message'}")
        elif a.outcome is not None:
            lines.append(f"     not run: {a.outcome}")
    lines += [f"Policy finding: {f}" for f in explanation.findings]
    lines.append("")
    lines.append(_ending(explanation))
    lines += [f"  {step}" for step in explanation.mode_steps]
    for c in explanation.verification:
        lines.append(f"  check {c.name}: {'ok' if c.ok else 'FAILED'} {c.detail}".rstrip())
    return "\n".join(lines)


def _signal_lines(signals: dict[str, JsonValue]) -> list[str]:
    """Signals, readable: scalars on one line, short lists on their own, nested ones counted."""
    scalars: list[str] = []
    lines: list[str] = []
    for name, value in signals.items():
        if value is None or value in ("", [], {}):
            continue
        if isinstance(value, list) and all(not isinstance(v, list | dict) for v in value):
            lines.append(f"  {name}: {'; '.join(str(v) for v in value)}")
        elif isinstance(value, list | dict):
            lines.append(f"  {name}: {len(value)} entries (`--json` shows them)")
        else:
            scalars.append(f"{name}={value}")
    head = [f"  signals: {', '.join(scalars)}"] if scalars else []
    return head + lines if head or lines else ["  signals: none recorded"]


def _ending(explanation: Explanation) -> str:
    if explanation.status == "dry run":
        return "What happened: nothing — a dry-run plan."
    if explanation.status == "waiting for approval":
        return "What happened: nothing yet — it waits for approval (`steward pending`)."
    if explanation.status == "in progress":
        return "What happened: not yet recorded (in progress)."
    if explanation.status == "interrupted":
        return f"What happened: interrupted — {explanation.error}."
    ran = sum(a.executed for a in explanation.actions)
    text = f"What happened: {ran} of {len(explanation.actions)} action(s) ran; {explanation.status}"
    return text + (f" — {explanation.error}." if explanation.error else ".")


def deliberation_line(p: DeliberationRecord) -> str:
    """One deliberation in a line: the question, what became of the answer, the transcript."""
    by = p.planner + (f"/{p.model}" if p.model else "")
    acts = "; ".join(a.describe() for a in p.actions) or "nothing"
    why = f" — {p.reason}" if p.reason else ""
    told = f"; transcript {p.transcript_digest[:12]}" if p.transcript_digest else ""
    return f"{p.question} {p.premise} by {by}: {p.outcome}, proposed {acts}{why}{told}"


def summary(record: Record) -> str:
    """One line saying what a record holds (for `steward audit show`)."""
    p = record.payload
    if isinstance(p, Intent | DryRunPlan):
        by = p.planner + (f"/{p.model}" if p.model else "")
        acts = "; ".join(f"{q.action.describe()} [{q.verdict}]" for q in p.proposals) or "nothing"
        return ("dry run: " if isinstance(p, DryRunPlan) else "") + f"{by} proposed {acts}"
    if isinstance(p, Outcome):
        ran = [r for r in p.results if r.executed]
        failed = sum(not r.ok for r in ran)
        checks = "verified" if all(c.ok for c in p.verification) else "verification FAILED"
        tail = f"; error: {p.error}" if p.error else ""
        return f"{len(ran)} action(s) ran, {failed} failed; {checks}{tail}"
    if isinstance(p, ApprovalRecord):
        word = "approved" if p.approved else "refused"
        return f"{p.principal} {word} action {p.action_index + 1} via {p.channel}"
    if isinstance(p, Execution):
        allowed = sum(v.verdict == "allow" for v in p.verdicts)
        refused = [v for v in p.verdicts if v.refused_at_execution]
        why = "".join(
            f"; action {v.index + 1} refused at execution by {', '.join(v.rule_ids)}"
            for v in refused
        )
        return f"judged at execution: {allowed} of {len(p.verdicts)} allowed{why}"
    if isinstance(p, FindingChange):
        return f"finding {p.status}: {p.finding} {p.key}" + (f" — {p.text}" if p.text else "")
    if isinstance(p, Fallback):
        return f"{p.from_planner} planner failed, {p.to_planner} decided: {p.reason}"
    if isinstance(p, DeliberationRecord):
        return deliberation_line(p)
    if isinstance(p, Interrupted):
        return f"intent seq {p.intent_seq} never got an outcome: {p.reason}"
    if isinstance(p, ModeStep):
        mode = f" to {p.target_mode}" if p.target_mode else ""
        return f"rotation {p.rotation_id}{mode}: {p.step} {p.status}"
    assert isinstance(p, Startup)
    clock = f"; times on the {p.clock} clock" if p.clock else ""
    note = f": {p.note}" if p.note else ""
    return f"steward {p.version} started (pid {p.pid} on {p.host}{clock}){note}"


def export_row(
    body: dict[str, Any],
    digest: str,
    mac: str | None,
    opening: dict[str, Any] | None,
    closing: dict[str, Any] | None,
) -> dict[str, Any]:
    """One stored record as a flat JSON object, its decision's actions joined to their results.

    Works on the stored JSON bodies (the record, its decision's intent or plan, and its outcome
    or interrupted record) so that exporting 100,000 records builds no model per record.
    """
    payload = body["payload"]
    row: dict[str, Any] = {
        "seq": body["seq"],
        "time": body["time"],
        "kind": body["kind"],
        "schema_version": body["v"],
        "decision_id": body["decision_id"],
        "prev_hash": body["prev_hash"],
        "hash": digest,
        "hmac": mac,
        "planner": payload.get("from_planner") if body["kind"] == "fallback" else None,
        "model": payload.get("model") if body["kind"] == "fallback" else None,
        "actions": [],
    }
    if opening is not None and body["kind"] in ("intent", "plan", "outcome", "interrupted"):
        decided = opening["payload"]
        results = {
            r["index"]: r for r in (closing["payload"].get("results", ()) if closing else ())
        }
        row["planner"], row["model"] = decided["planner"], decided.get("model")
        row["actions"] = [
            _export_action(i, proposal, results.get(i))
            for i, proposal in enumerate(decided["proposals"])
        ]
    row["payload"] = payload
    return row


def _export_action(
    index: int, proposal: dict[str, Any], result: dict[str, Any] | None
) -> dict[str, Any]:
    action = proposal["action"]
    return {
        "index": index,
        "type": action["type"],
        "target": parse_action(action).target,
        "params": {k: v for k, v in action.items() if k not in ("type", "reason")},
        "reason": action.get("reason", ""),
        "verdict": proposal["verdict"],
        "rule_ids": list(proposal["rule_ids"]),
        "executed": bool(result and result["executed"]),
        "ok": result["ok"] if result else None,
        "outcome": result["message"] if result else None,
    }
