"""Putting a loop together from a data dir: the cluster, the policy, the planner, a dry run.

Shared by the CLI commands (run, plan, approve) and the benchmark, so that each opens the
simulated cluster, the policy and the planner the same way:
- the cluster: the one saved in the data dir; a fresh data dir gets the built-in day
  (agent/daemon/day.py) unless `--scenario` names another;
- the policy: `--policy`, else the one the last `steward run` used there, else the default;
- the planner: `rules`, or `llm` — agent.planners.llm.make_planner(policy), issue 7's seam.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from agent.approvals.inbox import Inbox
from agent.audit import AuditError, AuditLog, DryRunPlan, new_decision_id, proposals
from agent.daemon.catchup import catch_up
from agent.daemon.day import default_day
from agent.loop.state import Decision
from agent.planners.base import Planner
from agent.planners.rules import RulesPlanner, RulesSettings
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy
from tools.actions import Plan
from tools.backends.sim import SimCluster
from tools.errors import InvalidInput
from tools.sim import store
from tools.sim.scenario import load_scenario

RUN_FILE = "run.json"


def open_sim(data_dir: Path, scenario: Path | None) -> SimCluster:
    """The data dir's simulated cluster (see the module docstring)."""
    if scenario is not None:
        return SimCluster.open(data_dir, load_scenario(scenario))
    if store.load(data_dir) is not None:
        return SimCluster.open(data_dir)
    return SimCluster.open(data_dir, default_day())


def open_policy(path: Path | None) -> tuple[Policy, Path]:
    chosen = path or DEFAULT_POLICY
    return load_policy(chosen), chosen


def run_policy_path(data_dir: Path) -> Path | None:
    """The policy file the last `steward run` in this data dir used, if known."""
    path = data_dir / RUN_FILE
    if not path.is_file():
        return None
    value = json.loads(path.read_text()).get("policy")
    return Path(value) if isinstance(value, str) else None


def planner_for(name: str, policy: Policy) -> Planner:
    """The planner called `name`; the rules planner stays the fallback of any other."""
    if name == "rules":
        return RulesPlanner(RulesSettings.from_policy(policy))
    if name == "llm":
        try:
            module = importlib.import_module("agent.planners.llm")
        except ModuleNotFoundError as exc:
            if exc.name != "agent.planners.llm":
                raise
            raise InvalidInput(
                "--planner llm: the LLM planner (agent/planners/llm.py) is not in this build; "
                "use --planner rules"
            ) from None
        planner: Planner = module.make_planner(policy)
        return planner
    raise InvalidInput(f"--planner {name!r}: choose rules or llm")


def dry_run(data_dir: Path, planner_name: str, policy_path: Path | None) -> dict[str, Any]:
    """One decision made dry: observe, assess, plan, judge; nothing executed or saved."""
    # The graph's modules (LangGraph, the LLM client) load only for commands that run it.
    from agent.daemon.runtime import read_memory
    from agent.loop.context import LoopContext
    from agent.loop.nodes import assess, guard, observe
    from agent.loop.nodes import plan as plan_node

    sim = open_sim(data_dir, None)
    policy, _ = open_policy(policy_path or run_policy_path(data_dir))
    settings = RulesSettings.from_policy(policy)
    try:
        audit = AuditLog.open(data_dir, clock=lambda: sim.now)
        catch_up(sim, audit.last_time())  # in memory only: a dry run saves nothing
        writer: str | None = None
    except AuditError as exc:
        audit = AuditLog.open(data_dir, readonly=True)
        writer = str(exc)
    inbox = Inbox.open(data_dir)
    try:
        ctx = LoopContext(
            cluster=sim,
            policy=policy,
            audit=audit,
            inbox=inbox,
            settings=settings,
            planner=planner_for(planner_name, policy),
            fallback=RulesPlanner(settings),
            crash_at=None,
            hold_denied=False,
        )
        ctx.memory = read_memory(data_dir)
        d = Decision(decision_id=new_decision_id(), dry_run=True)
        d = _step(d, observe(d, ctx))
        d = _step(d, assess(d, ctx))
        assert d.signals is not None and d.observed_at is not None
        if d.signals.needs_decision:
            d = _step(d, plan_node(d, ctx))
            if d.plan is not None and d.plan.actions:
                d = _step(d, guard(d, ctx))
        signals, observed_at = d.signals, d.observed_at
        digest = ctx.snapshot(d.decision_id).digest()
        assert signals is not None and observed_at is not None
        made = d.plan or Plan(rationale="nothing to decide", planner=ctx.planner.name)
        d = d.model_copy(update={"plan": made})
        recorded = None
        if writer is None:
            recorded = audit.append(
                DryRunPlan(
                    decision_id=d.decision_id,
                    observed_at=observed_at,
                    observation_digest=digest,
                    signals=signals.for_log({v.action.target for v in d.verdicts}),
                    planner=made.planner,
                    model=made.model,
                    rationale=made.rationale,
                    proposals=proposals(made, d.verdicts) if d.verdicts else (),
                    findings=d.plan_findings,
                )
            ).seq
    finally:
        audit.close()
        inbox.close()
    return _report(d, digest, recorded, writer)


def _step(d: Decision, update: dict[str, Any]) -> Decision:
    return d.model_copy(update=update)


def _report(d: Decision, digest: str, recorded: int | None, writer: str | None) -> dict[str, Any]:
    assert d.signals is not None
    return {
        "decision_id": d.decision_id,
        "dry_run": True,
        "observed_at": d.observed_at,
        "observation_digest": digest,
        "planner": d.plan.planner if d.plan else None,
        "fallback_reason": d.fallback_reason,
        "rationale": d.plan.rationale if d.plan else "",
        "findings": list(d.signals.findings),
        "notices": {
            "shared_card_anomalies": list(d.signals.shared_card_anomalies),
            "degraded_links": [link.model_dump(mode="json") for link in d.signals.degraded_links],
            "stale_metrics": list(d.signals.stale_metrics),
        },
        "plan_findings": list(d.plan_findings),
        "actions": [
            {
                "action": v.action.model_dump(mode="json"),
                "describe": v.action.describe(),
                "reason": v.action.reason,
                "verdict": v.decision,
                "rule_ids": list(v.rule_ids),
                "message": v.message,
                "expected_effect": v.expected_effect,
            }
            for v in d.verdicts
        ],
        "recorded": recorded,
        "not_recorded": writer,
    }
