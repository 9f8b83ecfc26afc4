"""What a decision tells people (through the notifier) beyond its audit records: that it waits
for an approval, and that the gate refused what was approved."""

from __future__ import annotations

from datetime import datetime

from agent.audit import GateVerdict
from agent.loop.state import Decision
from agent.support.notices import Notice
from policies.model import Policy


def waiting_notice(d: Decision, policy: Policy) -> Notice:
    """What people are told when a decision starts to wait for them: who may approve what."""
    assert d.observed_at is not None
    groups = policy.approvers.groups
    asks = []
    for i, v in enumerate(d.verdicts):
        if v.decision == "needs_approval":
            who = [f"{g} ({', '.join(groups[g].members) or 'no members'})" for g in v.approvers]
            asks.append(f"#{i + 1} {v.action.describe()} — may approve: {', '.join(who) or '?'}")
    return Notice(
        kind="needs_approval",
        decision_id=d.decision_id,
        text=f"decision {d.decision_id} waits for approval: {'; '.join(asks)}",
        at=d.observed_at,
        details={"approve": f"steward approve {d.decision_id}"},
    )


def refused_notice(d: Decision, refused: list[GateVerdict], at: datetime) -> Notice:
    """What people are told when the gate refused approved actions: which, and by what rule."""
    lines = [
        f"#{g.index + 1} {d.verdicts[g.index].action.describe()}: {', '.join(g.rule_ids)} — "
        f"{g.message}"
        for g in refused
    ]
    return Notice(
        kind="refused_at_execution",
        decision_id=d.decision_id,
        text=f"decision {d.decision_id}: refused at execution, nothing of it ran: "
        + "; ".join(lines),
        at=at,
        details={"rule_ids": sorted({r for g in refused for r in g.rule_ids})},
    )
