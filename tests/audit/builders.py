"""Builders shared by the audit tests: a fake clock and realistic decision payloads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent.audit import ActionOutcome, ApprovalRecord, Check, Intent, Outcome, Proposal
from tools.actions import DrainNode, RotateMode, ScaleWorkload

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class FakeClock:
    """A clock that moves only when told to (one second per reading by default)."""

    def __init__(self, start: datetime = T0, step_s: float = 1.0) -> None:
        self.now = start
        self.step = timedelta(seconds=step_s)

    def __call__(self) -> datetime:
        current = self.now
        self.now += self.step
        return current


def intent(decision_id: str, digest: str = "ab" * 32) -> Intent:
    """Three proposals: one allowed, one needing approval, one denied."""
    return Intent(
        decision_id=decision_id,
        observed_at=T0,
        observation_digest=digest,
        signals={"burst-llm.queue_depth": 14, "render.idle_min": 42.5, "slo_breach": True},
        planner="llm",
        model="qwen3-32b",
        rationale="queue wait above the SLO while render sits idle",
        proposals=(
            Proposal(
                action=ScaleWorkload(workload="burst-llm", replicas=2, reason="queue above SLO"),
                verdict="allow",
                rule_ids=("pools.burst.max_cards",),
            ),
            Proposal(
                action=RotateMode(target_mode="cluster", reason="long context asked for"),
                verdict="needs_approval",
                rule_ids=("approval.rotate_mode.working_hours",),
                message="a mode rotation during working hours needs a human",
            ),
            Proposal(
                action=DrainNode(node="render-1", reason="free the cards"),
                verdict="deny",
                rule_ids=("protected.render",),
                message="render is protected",
            ),
        ),
    )


def approval(decision_id: str, approved: bool = True) -> ApprovalRecord:
    return ApprovalRecord(
        decision_id=decision_id,
        action_index=1,
        approved=approved,
        principal="U024BE7LH (alice)",
        channel="slack",
        decided_at=T0 + timedelta(minutes=2),
    )


def outcome(decision_id: str) -> Outcome:
    return Outcome(
        decision_id=decision_id,
        results=(
            ActionOutcome(index=0, executed=True, ok=True, changed=True, message="scaled to 2"),
            ActionOutcome(index=1, executed=True, ok=True, changed=True, message="now cluster"),
            ActionOutcome.skipped(2, "denied by protected.render"),
        ),
        verification=(Check(name="burst-llm ready", ok=True, detail="2/2 replicas"),),
    )
