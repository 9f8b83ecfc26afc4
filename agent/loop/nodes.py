"""The graph's nodes: observe, assess, plan, guard, approve, act, verify, record.

Each node is a function of the decision state and the loop context that returns a partial
update. Only `act` changes the cluster, and it is idempotent per decision id: before running
anything it asks the decision log whether this decision already has an intent — if it does, the
process died mid-act, so act re-observes and records what is there instead of running anything
again. `approve` holds `interrupt()`; it runs again from its first line when resumed, so all it
does before the interrupt is an idempotent insert into the inbox.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import structlog
from langgraph.types import interrupt

from agent.audit import (
    ActionOutcome,
    Approval,
    Check,
    Fallback,
    Intent,
    Outcome,
    proposals,
)
from agent.loop.assess import assess as assess_signals
from agent.loop.context import LoopContext
from agent.loop.effects import expected_effect
from agent.loop.execute import applied, run_action
from agent.loop.state import ActionVerdict, Decision, Memory
from agent.loop.state import Approval as Answer
from agent.planners.base import PlannerReport
from agent.planners.errors import PlannerFailed
from policies.engine import judge
from tools.actions import Action, Plan, RotateMode

Update = dict[str, Any]
PLANNER_REST = timedelta(minutes=5)
"""After a planner fails, the rules planner decides alone for this long (simulated time on the
simulator): a down endpoint is not hammered every tick, nor the log filled with its failures."""
log = structlog.get_logger("steward.loop")


def observe(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("observe")
    state = ctx.observe(d.decision_id)
    return {"observed_at": state.observed_at, "stage": "assess"}


def assess(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("assess")
    state = ctx.snapshot(d.decision_id)
    signals, ctx.memory = assess_signals(state, ctx.memory, ctx.settings.assess, ctx.policy)
    return {"signals": signals, "stage": "plan"}


def plan(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("plan")
    state = ctx.snapshot(d.decision_id)
    assert d.signals is not None, "plan runs only after assess"
    started = time.perf_counter()
    reason: str | None = None
    fresh, asked = False, False
    now = state.observed_at
    resting = ctx.planner_resting_until
    if ctx.planner is not ctx.fallback and resting is not None and now < resting:
        # The planner failed lately: the rules decide without waiting on it again.
        reason = (
            f"{ctx.planner.name} planner not asked until {resting:%H:%M:%S} after it failed: "
            f"{ctx.planner_failure}"
        )
        proposed = ctx.fallback.plan(state, d.signals)
    else:
        asked = True
        try:
            proposed = ctx.planner.plan(state, d.signals)
        except PlannerFailed as failed:
            reason, fresh = failed.reason, True
            ctx.planner_failure = failed.reason
            ctx.planner_resting_until = now + PLANNER_REST
            proposed = ctx.fallback.plan(state, d.signals)
    if reason is not None:
        ctx.telemetry.fallbacks.labels(planner=ctx.planner.name).inc()
    elapsed = time.perf_counter() - started
    ctx.telemetry.planner_seconds.labels(planner=ctx.planner.name).observe(elapsed)
    report = getattr(ctx.planner, "last_report", None) if asked else None
    if isinstance(report, PlannerReport):
        ctx.telemetry.planner_report(report)
        log.info("planner", decision=d.decision_id, **report.model_dump(mode="json"))
    proposed = _hold_back(proposed, d, ctx, state.observed_at)
    return {
        "plan": proposed,
        "fallback_reason": reason,
        "fallback_fresh": fresh,
        "planner_ms": round(elapsed * 1000, 3),
        "stage": "guard",
    }


def _hold_back(proposed: Plan, d: Decision, ctx: LoopContext, now: datetime) -> Plan:
    """Drop what already waits for a human, what a long action in progress holds (a drain, a
    rotation), and (in the daemon) what was denied lately."""
    waiting = ctx.inbox.open_keys()
    held = denied_recently(ctx.memory, now) if ctx.hold_denied else {}
    kept: list[Action] = []
    notes: list[str] = []
    for action in proposed.actions:
        if (action.type, action.target) in waiting:
            notes.append(f"{action.describe()}: already waits for approval")
        elif ctx.held and (action.target in ctx.held or isinstance(action, RotateMode)):
            notes.append(f"{action.describe()}: a long action in progress holds it")
        elif action_key(action) in held:
            notes.append(f"{action.describe()}: denied at {held[action_key(action)]:%H:%M:%S}")
        else:
            kept.append(action)
    if not notes:
        return proposed
    rationale = "; ".join(filter(None, (proposed.rationale, "held back: " + "; ".join(notes))))
    return proposed.model_copy(update={"actions": tuple(kept), "rationale": rationale[:8000]})


def guard(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("guard")
    state = ctx.snapshot(d.decision_id)
    assert d.plan is not None, "guard runs only after plan"
    history = ctx.history(state, ctx.memory)
    judgement = judge(d.plan, state, ctx.policy, history, now=state.observed_at)
    verdicts = tuple(
        ActionVerdict(
            action=v.action,
            decision=v.decision,
            rule_ids=v.rule_ids,
            message=v.message,
            expected_effect=expected_effect(v.action, state),
        )
        for v in judgement.verdicts
    )
    for v in verdicts:
        ctx.telemetry.decisions.labels(verdict=v.decision).inc()
    findings = tuple(f"{f.rule_id}: {f.message}" for f in judgement.findings)
    denied = {action_key(v.action): state.observed_at for v in verdicts if v.decision == "deny"}
    if denied:
        kept = denied_recently(ctx.memory, state.observed_at)
        ctx.memory = ctx.memory.model_copy(update={"denied": {**kept, **denied}})
    return {"verdicts": verdicts, "plan_findings": findings, "stage": "act"}


DENIED_HOLD_S = 600.0
"""An action the guard denied is not proposed again for this long (the log is not a ticker)."""


def action_key(action: Action) -> str:
    """An action's identity without its reason: two proposals of one change share it."""
    return action.model_dump_json(exclude={"reason"})


def denied_recently(memory: Memory, now: datetime) -> dict[str, datetime]:
    return {k: at for k, at in memory.denied.items() if (now - at).total_seconds() < DENIED_HOLD_S}


def approve(d: Decision, ctx: LoopContext) -> Update:
    waiting = [(i, v) for i, v in enumerate(d.verdicts) if v.decision == "needs_approval"]
    assert d.observed_at is not None
    ctx.inbox.ensure_waiting(
        d.decision_id,
        [v.action for _, v in waiting],
        [i for i, _ in waiting],
        [v.message for _, v in waiting],
        d.observed_at,
    )
    ctx.maybe_crash("approve")
    answer = Answer.model_validate(interrupt({"decision_id": d.decision_id}))
    if answer.answer == "approved":
        state = ctx.snapshot(d.decision_id)
        refused = [
            v.action.describe()
            for _, v in waiting
            if not ctx.policy.may_approve(answer.by, v.action, state)
        ]
        if refused:
            answer = answer.model_copy(
                update={
                    "answer": "denied",
                    "reason": f"{answer.by} may not approve: {'; '.join(refused)}",
                }
            )
    return {"approval": answer, "stage": "act"}


def act(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("act")
    assert d.plan is not None and d.observed_at is not None
    earlier = ctx.audit.decision(d.decision_id)
    if any(r.kind == "intent" for r in earlier):
        return _reconcile(d, ctx)
    digest = ctx.snapshot(d.decision_id).digest()
    ctx.audit.write_intent(_intent(d, digest))
    approved = d.approval is not None and d.approval.answer == "approved"
    for i, v in enumerate(d.verdicts):
        if v.decision == "needs_approval" and d.approval is not None:
            ctx.audit.write_approval(
                Approval(
                    decision_id=d.decision_id,
                    action_index=i,
                    approved=approved,
                    principal=d.approval.by,
                    channel="cli",
                    decided_at=d.approval.at,
                    note=d.approval.reason,
                )
            )
    outcomes: list[ActionOutcome] = []
    failed: str | None = None
    for i, v in enumerate(d.verdicts):
        why_not = _why_not(v, approved, failed)
        if why_not:
            outcomes.append(ActionOutcome.skipped(i, why_not))
            continue
        result = run_action(ctx, v.action, d.decision_id, d.dry_run)
        ctx.telemetry.actions.labels(type=v.action.type, ok=str(result.ok).lower()).inc()
        outcomes.append(ActionOutcome.from_result(i, result))
        if not result.ok:
            failed = f"an earlier action ({v.action.describe()}) failed: {result.message}"
        if ctx.crash_at == "act.mid":
            _persist(ctx)  # the test hook dies after an action took effect in the cluster
            ctx.maybe_crash("act.mid")
    if any(o.executed for o in outcomes):
        _persist(ctx)
    return {"outcomes": tuple(outcomes), "digest": digest, "stage": "verify"}


def _persist(ctx: LoopContext) -> None:
    """Save the backend's state (the simulated cluster) once the decision's actions ran; a
    crash before this loses them from the cluster and the restart's reconcile says so."""
    if ctx.persist is not None:
        ctx.persist()


def _why_not(v: ActionVerdict, approved: bool, failed: str | None) -> str:
    if v.decision == "deny":
        return f"denied by {', '.join(v.rule_ids) or 'policy'}: {v.message}"
    if v.decision == "needs_approval" and not approved:
        return "approval was not given"
    if failed:
        return failed
    return ""


def _reconcile(d: Decision, ctx: LoopContext) -> Update:
    """A crash interrupted act after its intent: record what is there, run nothing again."""
    state = ctx.cluster.observe()
    outcomes = []
    for i, v in enumerate(d.verdicts):
        seen, detail = applied(v.action, state)
        outcomes.append(
            ActionOutcome(
                index=i,
                executed=False,
                ok=bool(seen),
                message="interrupted by a restart before its outcome was recorded; not run "
                f"again; observed now: {detail}",
                detail={"reconciled": True, "observed_applied": seen},
            )
        )
    return {"outcomes": tuple(outcomes), "reconciled": True, "stage": "verify"}


def verify(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("verify")
    ran = [o for o in d.outcomes if o.executed and o.ok]
    if not ran:
        return {"verification": (), "verified": True, "stage": "record"}
    state = ctx.cluster.observe()
    checks: list[Check] = []
    for outcome in ran:
        action = d.verdicts[outcome.index].action
        ok, detail = applied(action, state)
        checks.append(Check(name=action.describe(), ok=ok is not False, detail=detail))
    ok = all(c.ok for c in checks)
    return {"verification": tuple(checks), "verified": ok, "stage": "record"}


def record(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("record")
    earlier = ctx.audit.decision(d.decision_id)
    kinds = {r.kind for r in earlier}
    if d.fallback_reason and "fallback" not in kinds:
        ctx.audit.append(
            Fallback(
                decision_id=d.decision_id,
                from_planner=ctx.planner.name,
                model=getattr(ctx.planner, "model", None),
                reason=d.fallback_reason,
            )
        )
    if "intent" in kinds and not kinds & {"outcome", "interrupted"}:
        error = "interrupted mid-act by a restart; reconciled" if d.reconciled else None
        ctx.audit.write_outcome(
            Outcome(
                decision_id=d.decision_id,
                results=d.outcomes,
                verification=d.verification,
                error=error,
            )
        )
    ctx.forget(d.decision_id)
    if any(isinstance(v.action, RotateMode) for v in d.verdicts):
        ctx.memory = restart_mode_dwell(ctx.memory, d.observed_at)
    return {"recorded": True, "stage": "done"}


def restart_mode_dwell(memory: Memory, at: datetime | None) -> Memory:
    """After a rotation was decided on (run, refused or denied), demand must favour the other
    mode for a whole dwell again before it is proposed again: no stream of approval requests."""
    return memory.model_copy(update={"mode_favoured_since": at})


def _targets(d: Decision) -> set[str]:
    """The workloads a decision is about: its actions' targets and those its findings name."""
    targets = {v.action.target for v in d.verdicts}
    if d.signals is not None:
        said = " ".join(d.signals.findings)
        targets |= {w.workload for w in d.signals.workloads if f"{w.workload}:" in said}
    return targets


def _intent(d: Decision, digest: str) -> Intent:
    assert d.plan is not None and d.observed_at is not None
    return Intent(
        decision_id=d.decision_id,
        observed_at=d.observed_at,
        observation_digest=digest,
        signals=d.signals.for_log(_targets(d)) if d.signals else {},
        planner=d.plan.planner,
        model=d.plan.model,
        rationale=d.plan.rationale,
        proposals=proposals(d.plan, d.verdicts),
        findings=d.plan_findings,
    )
