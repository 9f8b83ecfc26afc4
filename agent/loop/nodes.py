"""The graph's nodes: observe, assess, plan, guard, approve, act, verify, record.

Each node is a function of the decision state and the loop context that returns a partial
update. Only `act` changes the cluster, and only through the gate (agent/loop/gate.py): every
action is judged again on a fresh observation, and what that judgement says is written to the
log (an `execution` record) before anything runs. Act is idempotent per decision id: before
running anything it asks the decision log whether this decision already has its execution
record — if it does, the process died mid-act, so act re-observes and records what is there
instead of running anything again. `approve` holds `interrupt()`; it runs again from its first
line when resumed, so all it does before the interrupt is idempotent: the decision's intent
into the log (once) and its request into the inbox.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime, timedelta
from typing import Any, Literal

import structlog
from langgraph.types import interrupt

from agent.approvals.asked import waits_for_a_person
from agent.audit import (
    ActionOutcome,
    ApprovalRecord,
    Check,
    DeliberationRecord,
    Execution,
    Fallback,
    GateVerdict,
    Intent,
    Outcome,
    proposals,
)
from agent.audit.execution import write_execution
from agent.loop.approval_split import splits, still_waits
from agent.loop.context import LoopContext
from agent.loop.decision_notices import refused_notice, waiting_notice
from agent.loop.execute import applied, run_action
from agent.loop.gate import at_execution
from agent.loop.holds import denied_recently, hold_back, hold_key, hold_until
from agent.loop.questions import split
from agent.loop.state import Decision, Deliberated
from agent.planners.base import PlannerReport
from agent.planners.errors import PlannerFailed
from agent.signals.assess import assess as assess_signals
from agent.signals.memory import Memory
from agent.support import pause
from agent.support.notices import Notice
from policies.engine import judge
from tools.actions import Plan, RotateMode, joined_notes
from tools.approval import Approval
from tools.effects import expected_effect
from tools.model import ClusterState

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
    if not d.dry_run:
        ctx.track(state, signals)
    return {"signals": signals, "stage": "plan", "deliberating": ctx.deliberations is not None}


def plan(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("plan")
    state = ctx.snapshot(d.decision_id)
    assert d.signals is not None, "plan runs only after assess"
    if d.deliberation is not None:
        return _judge_answer(d, ctx, state, d.deliberation)
    if d.split_part is not None:
        # The part of an answer that needs approval, split off to wait (see guard).
        return {"plan": d.split_part.plan, "stage": "guard"}
    if d.asked is not None:
        # A person's question: the model's proposal is the plan (its actions wait, see guard).
        proposed = Plan(
            actions=d.asked.actions,
            rationale=d.asked.rationale(),
            planner="llm",
            model=d.asked.model,
        )
        return {"plan": proposed, "stage": "guard"}
    if ctx.deliberations is not None:
        return _fast_path(d, ctx, state)
    started = time.perf_counter()
    reason: str | None = None
    fresh, asked = False, False
    now = state.observed_at
    resting = ctx.planner_resting_until
    if ctx.planner is not ctx.fallback and not ctx.leading():
        # The lead was lost since this tick began: no model call (its plan could not run).
        log.info("not leading: the planner is not asked", decision=d.decision_id)
        idle = Plan(rationale="this replica does not lead now", planner=ctx.planner.name)
        return {"plan": idle, "fallback_reason": None, "fallback_fresh": False, "stage": "guard"}
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
    proposed = hold_back(proposed, d, ctx, state.observed_at)
    if proposed.planner == ctx.fallback.name:
        proposed = _said_rules_decide(proposed, state, d, ctx)
    return {
        "plan": proposed,
        "fallback_reason": reason,
        "fallback_fresh": fresh,
        "planner_ms": round(elapsed * 1000, 3),
        "stage": "guard",
    }


def _said_rules_decide(proposed: Plan, state: ClusterState, d: Decision, ctx: LoopContext) -> Plan:
    """Without a model the rules decide the questions of judgment too; the rationale says so."""
    assert d.signals is not None
    questions = split(proposed, state, d.signals, ctx.policy).questions
    asked = [q for q in questions if q.rules_actions or q.kind == "anomaly"]
    if not asked:
        return proposed
    for q in asked:
        log.info(
            "question decided by the rules",
            decision=d.decision_id,
            question=q.line(),
            actions=[a.describe() for a in q.rules_actions],
            because="no model deliberates",
        )
    if not proposed.actions:
        return proposed
    note = "; ".join(f"{q.kind} decided by the rules (no model deliberates)" for q in asked)
    return proposed.model_copy(update={"rationale": joined_notes([proposed.rationale, note])})


def _fast_path(d: Decision, ctx: LoopContext, state: ClusterState) -> Update:
    """The rules decide the routine part now; each question of judgment goes to the model,
    beside the loop (agent/loop/deliberation.py), and its actions wait for its answer."""
    assert d.signals is not None and ctx.deliberations is not None
    started = time.perf_counter()
    rules = ctx.fallback.plan(state, d.signals)
    parts = split(rules, state, d.signals, ctx.policy)
    ctx.deliberations.forget_gone({q.key for q in parts.questions})
    notes: list[str] = []
    for q in parts.questions:
        started_id = None if d.dry_run else ctx.deliberations.ask(q, state, d.signals)
        if started_id is not None:
            notes.append(f"{q.line()} handed to the model (deliberation {started_id})")
    proposed = parts.routine
    if notes:
        proposed = proposed.model_copy(
            update={"rationale": joined_notes([proposed.rationale, *notes])}
        )
    elapsed = time.perf_counter() - started
    ctx.telemetry.planner_seconds.labels(planner=ctx.fallback.name).observe(elapsed)
    return {
        "plan": hold_back(proposed, d, ctx, state.observed_at),
        "planner_ms": round(elapsed * 1000, 3),
        "stage": "guard",
    }


def _judge_answer(d: Decision, ctx: LoopContext, state: ClusterState, asked: Deliberated) -> Update:
    """A deliberation's answer, on this decision's fresh observation: superseded when its
    premise is gone; else the model's plan, or the rules' actions for the question when the
    model failed, goes to the guard like any plan."""
    assert d.signals is not None
    rules = ctx.fallback.plan(state, d.signals)
    now = {q.key: q for q in split(rules, state, d.signals, ctx.policy).questions}
    current = now.get(asked.question.key)
    # The deliberation goes into the log now, whatever follows (a wait for approval too);
    # once: the node runs again from its first line after a restart.
    logged = any(r.kind == "deliberation" for r in ctx.audit.decision(d.decision_id))
    if current is None:
        log.info("deliberation superseded", decision=d.decision_id, premise=asked.question.key)
        if not logged:
            ctx.audit.append(_deliberation_record(asked, state.observed_at, "superseded"))
        return {"plan": None, "superseded": True, "stage": "record"}
    if asked.plan is not None:
        proposed = asked.plan
        reason = None
    else:
        reason = asked.fallback_reason or "the model gave no plan"
        proposed = Plan(
            actions=current.rules_actions,
            rationale=f"{current.line()}: the model failed ({reason}); the rules decide",
            planner=ctx.fallback.name,
        )
        ctx.telemetry.fallbacks.labels(planner=asked_planner(ctx)).inc()
    if not logged:
        outcome: Literal["planned", "fallback"] = "planned" if reason is None else "fallback"
        ctx.audit.append(_deliberation_record(asked, state.observed_at, outcome, proposed))
    return {
        "plan": hold_back(proposed, d, ctx, state.observed_at),
        "fallback_reason": reason,
        "fallback_fresh": reason is not None,
        "stage": "guard",
    }


def asked_planner(ctx: LoopContext) -> str:
    """The name of the planner that deliberates (the model's), for the log and /metrics."""
    return ctx.deliberations.model.name if ctx.deliberations is not None else ctx.planner.name


def guard(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("guard")
    state = ctx.snapshot(d.decision_id)
    assert d.plan is not None, "guard runs only after plan"
    history = ctx.history(state, ctx.memory)
    judgement = judge(d.plan, state, ctx.policy, history, now=state.observed_at)
    verdicts = judgement.verdicts
    if d.asked is not None:
        verdicts = tuple(waits_for_a_person(v, ctx.policy, state) for v in verdicts)
    if d.split_part is not None:
        split_from = d.split_part.split_from
        verdicts = tuple(still_waits(v, split_from, ctx.policy, state) for v in verdicts)
    update: Update = {}
    # A deliberation's answer that mixes actions allowed now with actions that need approval:
    # the allowed ones run now, the others wait as a decision of their own (approval_split.py).
    split = splits(d, verdicts)
    if split is not None:
        verdicts = split.verdicts
        update = {"plan": split.plan, "split_off": split.waiting}
        log.info(
            "answer split",
            decision=d.decision_id,
            waiting=split.waiting.decision_id,
            actions=[a.describe() for a in split.waiting.plan.actions],
        )
    expected = tuple(expected_effect(v.action, state) for v in verdicts)
    for decision, count in Counter(v.decision for v in verdicts).items():
        ctx.telemetry.decisions.labels(verdict=decision).inc(count)
    findings = tuple(f"{f.rule_id}: {f.message}" for f in judgement.findings)
    # A person's question holds nothing back from the loop's own plans.
    refused = [v for v in verdicts if v.decision == "deny" and d.asked is None]
    # The actions of one plan go together (a preemption is a scale-down and the scale-up it
    # frees cards for): one denied for a rule that passes later (a cooldown) is retried then,
    # and its partners with it rather than held the full DENIED_HOLD_S.
    retry = max((v.retry_at for v in refused if v.retry_at is not None), default=None)
    denied = {
        hold_key(v.action, state): hold_until(state.observed_at, v.retry_at or retry)
        for v in refused
    }
    if denied:
        kept = denied_recently(ctx.memory, state.observed_at)
        ctx.memory = ctx.memory.model_copy(update={"denied": {**kept, **denied}})
    return {
        **update,
        "verdicts": verdicts,
        "expected_effects": expected,
        "plan_findings": findings,
        "stage": "act",
    }


def approve(d: Decision, ctx: LoopContext) -> Update:
    waiting = [(i, v) for i, v in enumerate(d.verdicts) if v.decision == "needs_approval"]
    assert d.observed_at is not None
    # From the moment it waits, the decision is in the log (what it proposes, the verdicts, who
    # may approve), so `steward audit explain` answers for it; written once (the node runs again
    # from here when resumed).
    if not any(r.kind == "intent" for r in ctx.audit.decision(d.decision_id)):
        # The simulated cluster is not saved here (megabytes at a fleet's size): nothing ran
        # since its last save but time, and whoever opens it next brings it up to the log's
        # last time first (agent.daemon.catchup: a restart, `steward approve`), so no answer is
        # judged on a world older than this decision.
        ctx.audit.write_intent(_intent(d, ctx.snapshot(d.decision_id).digest()))
        ctx.notify(waiting_notice(d, ctx.policy))
    ctx.inbox.ensure_waiting(
        d.decision_id,
        [v.action for _, v in waiting],
        [i for i, _ in waiting],
        [v.message for _, v in waiting],
        d.observed_at,
    )
    ctx.maybe_crash("approve")
    answer = Approval.model_validate(interrupt({"decision_id": d.decision_id}))
    return {"approval": answer, "stage": "act"}


def act(d: Decision, ctx: LoopContext) -> Update:
    ctx.maybe_crash("act")
    assert d.plan is not None and d.observed_at is not None
    kinds = {r.kind for r in ctx.audit.decision(d.decision_id)}
    if "execution" in kinds:
        return _reconcile(d, ctx)
    # The gate: judged again on a fresh observation before anything runs. A decision that
    # waited for a human, or a process restarted since the guard judged, observes anew; a
    # decision going straight through acts on the observation of this very tick.
    waited = d.approval is not None
    state = ctx.observe(d.decision_id) if waited else ctx.snapshot(d.decision_id)
    history = ctx.history(state, ctx.memory)
    gate = at_execution(
        d.verdicts,
        d.approval,
        decided_at=d.observed_at,
        state=state,
        policy=ctx.policy,
        history=history,
        favoured_mode=_favoured_lately(ctx, state.observed_at),
    )
    digest = state.digest()
    write_execution(
        ctx.audit,
        Execution(
            decision_id=d.decision_id,
            observed_at=state.observed_at,
            observation_digest=digest,
            verdicts=gate,
        ),
        intent=None if "intent" in kinds else _intent(d, digest),
        approvals=_approvals(d),
    )
    refused = [g for g in gate if g.refused_at_execution]
    if refused:
        ctx.telemetry.refused_at_execution.inc(len(refused))
        ctx.notify(refused_notice(d, refused, state.observed_at))
    outcomes: list[ActionOutcome] = []
    held = pause.read(ctx.data_dir)
    # A paused agent decides and records, but runs nothing: the log says who paused it.
    failed = f"the agent is {held.line()}; `steward resume` lifts it" if held else None
    for v, g in zip(d.verdicts, gate, strict=True):
        if g.verdict != "allow" or failed:
            outcomes.append(ActionOutcome.skipped(g.index, failed or _why_not(g)))
            continue
        result = run_action(ctx, v.action, d.decision_id, d.dry_run)
        ctx.telemetry.actions.labels(type=v.action.type, ok=str(result.ok).lower()).inc()
        outcomes.append(ActionOutcome.from_result(g.index, result))
        if not result.ok:
            failed = f"an earlier action ({v.action.describe()}) failed: {result.message}"
            ctx.notify(
                Notice(
                    kind="action_failed",
                    decision_id=d.decision_id,
                    text=f"{v.action.describe()} failed: {result.message}",
                    at=state.observed_at,
                    details={"action": g.index + 1},
                )
            )
        if ctx.crash_at == "act.mid":
            _persist(ctx)  # the test hook dies after an action took effect in the cluster
            ctx.maybe_crash("act.mid")
    if any(o.executed for o in outcomes):
        _persist(ctx)
    return {"outcomes": tuple(outcomes), "digest": digest, "execution": gate, "stage": "verify"}


def _favoured_lately(ctx: LoopContext, now: datetime) -> str | None:
    """The mode demand has favoured within the grace of the loop's memory (its hysteresis)."""
    memory = ctx.memory
    seen = memory.mode_seen_at
    if seen is None or (now - seen).total_seconds() > ctx.settings.assess.mode_grace_s:
        return None
    return memory.mode_favoured


def _approvals(d: Decision) -> list[ApprovalRecord]:
    """The human's answer as one audit record per action that waited for it (none when the
    request expired: nobody answered)."""
    answer = d.approval
    if answer is None or answer.answer == "expired":
        return []
    return [
        ApprovalRecord.of(d.decision_id, i, answer)
        for i, v in enumerate(d.verdicts)
        if v.decision == "needs_approval"
    ]


def _persist(ctx: LoopContext) -> None:
    """Save the backend's state (the simulated cluster) once the decision's actions ran; a
    crash before this loses them from the cluster and the restart's reconcile says so."""
    if ctx.persist is not None:
        ctx.persist()


def _why_not(g: GateVerdict) -> str:
    if g.refused_at_execution:
        return f"refused at execution by {', '.join(g.rule_ids)}: {g.message}"
    return g.message


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
    asked = d.deliberation
    failed_planner = asked_planner(ctx) if asked is not None else ctx.planner.name
    if d.fallback_reason and "fallback" not in kinds:
        ctx.audit.append(
            Fallback(
                decision_id=d.decision_id,
                from_planner=failed_planner,
                model=asked.model if asked is not None else getattr(ctx.planner, "model", None),
                reason=d.fallback_reason,
            )
        )
        if d.fallback_fresh and d.observed_at is not None:
            ctx.notify(
                Notice(
                    kind="planner_fallback",
                    decision_id=d.decision_id,
                    text=f"the {failed_planner} planner failed ({d.fallback_reason}); the "
                    "rules planner decided",
                    at=d.observed_at,
                )
            )
    if asked is not None and asked.question.kind == "rotation":
        ctx.memory = restart_mode_dwell(ctx.memory, d.observed_at)
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


def _deliberation_record(
    asked: Deliberated,
    judged_at: datetime,
    outcome: Literal["planned", "fallback", "superseded"],
    went: Plan | None = None,
) -> DeliberationRecord:
    if outcome == "superseded":
        reason = "the world changed meanwhile: its premise no longer held; nothing of it ran"
    else:
        reason = asked.fallback_reason or (asked.plan.rationale if asked.plan else "")
    shown = asked.plan.actions if asked.plan is not None else ()
    if outcome == "fallback" and went is not None:
        shown = went.actions
    return DeliberationRecord(
        decision_id=asked.deliberation_id,
        question=asked.question.kind,
        premise=asked.question.key,
        asked_at=asked.asked_at,
        judged_at=judged_at,
        outcome=outcome,
        model=asked.model,
        reason=reason[:2000],
        actions=shown,
        prompt_tokens=asked.prompt_tokens,
        completion_tokens=asked.completion_tokens,
        latency_s=asked.latency_s,
        tools_called=asked.tools_called,
        transcript_digest=asked.transcript_digest,
    )


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
