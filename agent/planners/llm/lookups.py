"""Answers to the LLM planner's read-only look-ups, from the decision's own observation.

Each answer is a small JSON document, fenced as untrusted data like the first prompt (every
cluster string cut and escaped), with lists capped so that a look-up at a large node or workload
stays small. A look-up that finds nothing says so; it is not an error of the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from functools import cached_property
from typing import Any

from agent.audit import AuditLog
from agent.planners import sizing
from agent.planners.llm.audit_lookups import audit_explain, audit_search
from agent.planners.llm.prompts import MAX_LISTED, fenced, policy_brief, untrusted
from agent.planners.llm.tool_calls import (
    Args,
    ExplainDecision,
    GetDryRunPlan,
    GetForecast,
    GetHistory,
    GetMemoryFit,
    GetModePreflight,
    GetModeStatus,
    GetNode,
    GetPlacement,
    GetStatus,
    GetWorkload,
    SearchAudit,
)
from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.rotation.runner import rotation_settings
from agent.signals.model import Signals
from policies.engine import judge
from policies.history import History
from policies.model import Policy
from tools.errors import StewardError
from tools.model import ClusterState, Metric
from tools.modes import demand_from_state, rotation_gain
from tools.modes.preflight import PreflightLimits, placement_fit, preflight
from tools.placement import fit, pick_node


def _metric(m: Metric, scale: float = 1.0) -> float | str:
    """A reading as a number when fresh, else with its status ('stale', 'missing') said."""
    if m.value is None:
        return m.status
    value = m.value * scale
    return round(value, 2) if m.usable else f"{value:.2f} ({m.status})"


@dataclass(frozen=True)
class Lookups:
    """Answers the read-only tools from the decision's observation, policy, history and log."""

    state: ClusterState
    policy: Policy | None
    history: Callable[[], History] | None
    _: KW_ONLY
    signals: Signals | None = None
    audit: Callable[[], AuditLog] | None = None

    @cached_property
    def rules(self) -> RulesPlanner:
        """The rules planner under the decision's policy, for the dry-run plan look-up."""
        if self.policy is None:
            return RulesPlanner()
        return RulesPlanner(RulesSettings.from_policy(self.policy))

    def answer(self, call: Args) -> str:
        """The fenced JSON result of one look-up; a look-up that finds nothing says so."""
        try:
            result = self._answer(call)
        except StewardError as exc:
            result = {"error": untrusted(str(exc), 300)}
        return fenced(result)

    def _answer(self, call: Args) -> dict[str, Any]:
        if isinstance(call, GetNode):
            return self._node(call.name)
        if isinstance(call, GetWorkload):
            return self._workload(call.name)
        if isinstance(call, GetHistory):
            return self._history(call.limit)
        if isinstance(call, GetPlacement):
            return self._placement(call.workload)
        if isinstance(call, GetStatus):
            return self._status()
        if isinstance(call, GetForecast):
            return self._forecast(call.workload)
        if isinstance(call, GetModeStatus):
            return self._modes()
        if isinstance(call, GetModePreflight):
            return self._preflight(call.target)
        if isinstance(call, GetDryRunPlan):
            return self._dry_run()
        if isinstance(call, SearchAudit):
            return audit_search(self.audit, call.text, call.limit)
        if isinstance(call, ExplainDecision):
            return audit_explain(self.audit, call.decision_id)
        if isinstance(call, GetMemoryFit):
            report = fit(call.model, call.context, call.mode)
            return {
                "fits": report.fits,
                "largest_context": report.largest_context,
                "headroom_gib": round(report.headroom_bytes / 2**30, 1),
                "reasons": list(report.reasons),
            }
        brief = policy_brief(self.policy)
        if self.policy is not None:
            brief["cooldowns"] = self.policy.cooldowns.model_dump(mode="json")
        return brief

    def _node(self, name: str) -> dict[str, Any]:
        node = self.state.node(name)
        if node is None:
            return {"error": f"no node named {untrusted(name, 60)!r}"}
        return {
            "name": untrusted(node.name),
            "ready": node.ready,
            "cordoned": node.cordoned,
            "labels": {
                untrusted(k, 60): untrusted(v, 80) for k, v in list(node.labels.items())[:10]
            },
            "taints": [f"{untrusted(t.key, 60)}:{t.effect}" for t in node.taints[:6]],
            "memory_total_gib": round(node.memory_total_bytes / 2**30, 1),
            "unified_memory": node.unified_memory,
            "scheduler": node.scheduler.model_dump() if node.scheduler else None,
            "cards": [
                {
                    "index": g.index,
                    "model": untrusted(g.model, 60),
                    "utilization": _metric(g.utilization),
                    "memory_used_gib": _metric(g.memory_used_bytes, scale=2**-30),
                    "sharing": f"{g.sharing.mode}x{g.sharing.replicas}",
                    "clients": [untrusted(c, 80) for c in g.clients[:8]],
                }
                for g in node.gpus[:16]
            ],
        }

    def _workload(self, name: str) -> dict[str, Any]:
        w = self.state.workload(name)
        if w is None:
            return {"error": f"no workload named {untrusted(name, 60)!r}"}
        return {
            "name": untrusted(w.name),
            "kind": w.kind,
            "pool": untrusted(w.pool),
            "replicas": w.desired_replicas,
            "ready": w.ready_replicas,
            "cards_per_replica": w.cards_per_replica,
            "nodes_per_replica": w.nodes_per_replica,
            "model": untrusted(w.model) if w.model else None,
            "context_length": w.context_length,
            "queue_depth": _metric(w.queue_depth),
            "queue_wait_s": _metric(w.queue_wait_s),
            "tokens_per_s": _metric(w.tokens_per_s),
            "ttft_s": _metric(w.ttft_s),
            "placement": [
                {"nodes": [untrusted(n, 80) for n in p.nodes], "ready": p.ready}
                for p in w.placement[:MAX_LISTED]
            ],
            "annotations": {
                untrusted(k, 80): untrusted(v, 300) for k, v in list(w.annotations.items())[:8]
            },
        }

    def _status(self) -> dict[str, Any]:
        s = self.state
        return {
            "observed_at": s.observed_at.isoformat(),
            "nodes": [
                [untrusted(n.name, 80), n.ready, n.cordoned, len(n.gpus)]
                for n in s.nodes[:MAX_LISTED]
            ],
            "nodes_more": max(0, len(s.nodes) - MAX_LISTED),
            "active_mode": untrusted(s.active_mode.name) if s.active_mode else None,
            "workloads": [
                {
                    "name": untrusted(w.name),
                    "pool": untrusted(w.pool),
                    "replicas": w.desired_replicas,
                    "ready": w.ready_replicas,
                    "queue": _metric(w.queue_depth),
                    "tokens_per_s": _metric(w.tokens_per_s),
                }
                for w in s.workloads[: MAX_LISTED * 2]
            ],
            "workloads_more": max(0, len(s.workloads) - MAX_LISTED * 2),
        }

    def _forecast(self, name: str) -> dict[str, Any]:
        w = self.state.workload(name)
        if w is None:
            return {"error": f"no workload named {untrusted(name, 60)!r}"}
        signal = self.signals.workload(name) if self.signals else None
        absorbed, figures = sizing.absorbs(w)
        out: dict[str, Any] = {
            "workload": untrusted(w.name),
            "replicas": w.desired_replicas,
            "ready": w.ready_replicas,
            "tokens_per_s": _metric(w.tokens_per_s),
            "one_fewer_absorbs_the_load": absorbed,
            "capacity": untrusted(figures, 300),
        }
        if signal is not None:
            out |= {
                "demand": untrusted(signal.line(), 300),
                "queue_trend_per_min": signal.demand_trend,
                "replicas_the_rules_size_for": sizing.wanted(w, signal, self.rules.settings.assess),
            }
        return out

    def _modes(self) -> dict[str, Any]:
        s = self.state
        advice = rotation_gain(s, demand_from_state(s), self.rules.settings.advice)
        return {
            "active_mode": untrusted(s.active_mode.name) if s.active_mode else None,
            "modes": [
                {
                    "name": untrusted(m.name),
                    "nodes": [untrusted(n, 80) for n in m.nodes[:4]],
                    "workloads": [untrusted(n, 80) for n in m.workloads[:4]],
                    "peak_tok_s": m.aggregate_peak_tok_s,
                    "single_stream_tok_s": m.single_stream_tok_s,
                    "max_context": m.max_context,
                }
                for m in s.modes[:4]
            ],
            "rotation_pays": advice.rotate,
            "rotation_target": untrusted(advice.target) if advice.target else None,
            "why": untrusted(advice.reason, 400),
            "wins": [untrusted(x, 200) for x in advice.wins[:4]],
        }

    def _preflight(self, target: str) -> dict[str, Any]:
        limits = PreflightLimits()
        if self.policy is not None:
            limits = rotation_settings(self.policy).limits
        report = preflight(self.state, target, limits, placement_fit)
        return {
            "target": untrusted(target, 60),
            "ok": report.ok,
            "checks": [
                {"name": untrusted(c.name, 80), "ok": c.ok, "message": untrusted(c.message, 200)}
                for c in report.checks[:12]
            ],
        }

    def _dry_run(self) -> dict[str, Any]:
        if self.signals is None:
            return {"error": "no signals for this observation: no dry-run plan"}
        plan = self.rules.plan(self.state, self.signals)
        if self.policy is None:
            return {"actions": [untrusted(a.describe()) for a in plan.actions]}
        history = self.history() if self.history else History(executed=())
        verdicts = judge(plan, self.state, self.policy, history).verdicts
        return {
            "rationale": untrusted(plan.rationale, 400),
            "actions": [
                {
                    "action": untrusted(v.action.describe()),
                    "verdict": v.decision,
                    "rules": list(v.rule_ids),
                    "why": untrusted(v.message, 200),
                }
                for v in verdicts[:MAX_LISTED]
            ],
        }

    def _history(self, limit: int) -> dict[str, Any]:
        if self.history is None:
            return {"executed": [], "note": "no history available to the planner"}
        executed = sorted(self.history().executed, key=lambda e: e.at, reverse=True)[:limit]
        return {
            "executed": [
                {"at": e.at.isoformat(), "action": untrusted(e.action.describe())} for e in executed
            ]
        }

    def _placement(self, name: str) -> dict[str, Any]:
        w = self.state.workload(name)
        if w is None:
            return {"error": f"no workload named {untrusted(name, 60)!r}"}
        candidates = pick_node(w, self.state)[:5]
        return {
            "candidates": [
                {
                    "rank": c.rank,
                    "nodes": [untrusted(n, 80) for n in c.nodes],
                    "free_slots_after": c.free_slots_after,
                    "reasons": [untrusted(r, 200) for r in c.reasons[:4]],
                }
                for c in candidates
            ],
            "fits_nowhere": not candidates,
        }
