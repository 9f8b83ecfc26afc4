"""The model's read-only view of the decision log: search and explain, fenced like any data.

Answers to `search_audit` and `explain_decision` (agent/planners/llm/tool_calls.py). They read the
log the daemon writes (or a reader opened on it) and change nothing; every text in them came
from the cluster or from a planner, so each is cut and later fenced as untrusted data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.audit import AuditLog, DeliberationRecord, Intent, explain
from agent.audit.explanations import deliberation_line
from agent.planners.llm.prompts import untrusted

SEARCHED = 2000
"""Most recent intents and deliberations a search reads."""


def audit_search(audit: Callable[[], AuditLog] | None, text: str, limit: int) -> dict[str, Any]:
    """Decisions newest first whose actions, reasons or rationale mention `text`."""
    if audit is None:
        return {"error": "no decision log is open to this model"}
    log = audit()
    needle = text.strip().lower()
    found: list[dict[str, Any]] = []
    records = [
        *log.records(kind="intent", limit=SEARCHED),
        *log.records(kind="deliberation", limit=SEARCHED),
    ]
    for record in sorted(records, key=lambda r: r.seq, reverse=True):
        p = record.payload
        if isinstance(p, Intent):
            actions = [
                f"{q.action.describe()} [{q.verdict}]"
                + (f" because {q.action.reason}" if q.action.reason else "")
                for q in p.proposals
            ]
            said = " ".join([p.decision_id, p.rationale, *actions]).lower()
            entry = {
                "decision_id": p.decision_id,
                "at": p.observed_at.isoformat(),
                "planner": p.planner,
                "actions": [untrusted(a, 300) for a in actions],
                "rationale": untrusted(p.rationale, 300),
            }
        elif isinstance(p, DeliberationRecord):
            line = deliberation_line(p)
            said = f"{p.decision_id} {line}".lower()
            entry = {
                "decision_id": p.decision_id,
                "at": record.time.isoformat(),
                "deliberation": untrusted(line, 400),
            }
        else:
            continue
        if needle and needle not in said:
            continue
        found.append(entry)
        if len(found) >= limit:
            break
    return {"decisions": found, "searched_for": untrusted(text, 100)}


def audit_explain(audit: Callable[[], AuditLog] | None, decision_id: str) -> dict[str, Any]:
    """One decision explained: seen, planned, judged, run."""
    if audit is None:
        return {"error": "no decision log is open to this model"}
    records = audit().decision(decision_id)
    if not records:
        return {"error": f"no decision {untrusted(decision_id, 60)!r} in the log"}
    deliberations = [
        deliberation_line(r.payload) for r in records if isinstance(r.payload, DeliberationRecord)
    ]
    try:
        explanation = explain(records)
    except ValueError:
        return {"decision_id": decision_id, "deliberations": deliberations}
    return {
        "decision_id": explanation.decision_id,
        "status": explanation.status,
        "observed_at": explanation.observed_at.isoformat(),
        "planner": explanation.planner,
        "rationale": untrusted(explanation.rationale, 400),
        "actions": [
            {
                "action": untrusted(a.description, 200),
                "verdict": a.verdict,
                "rules": list(a.rule_ids),
                "reason": untrusted(a.reason or "", 300),
                "ran": a.executed,
                "outcome": untrusted(a.outcome or "", 200),
            }
            for a in explanation.actions[:8]
        ],
        "deliberations": [untrusted(d, 400) for d in deliberations],
    }
