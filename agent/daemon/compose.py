"""The composition root: configuration in, a loop's parts out — the one place that knows
which backend and which metric sources a command runs against.

Shared by the CLI commands (run, plan, status, approve, mode …) and the benchmarks, so that each
opens the cluster, the policy and the planner the same way:
- the backend (`backend:` in steward.yaml, `--backend`): `sim`, the embedded simulated cluster
  saved in the data dir (a fresh data dir gets the built-in day unless a scenario names
  another), plugged in from the lab by entry point (tools/backends/plugins.py), or
  `kubernetes`; plus the configured metric sources;
- who may act (`Opened.leadership`): on the simulated cluster the data dir's lock alone (`Sole`);
  on Kubernetes the replica that holds the Lease `kubernetes.leader_election` names
  (`LeaseLeadership`), so two replicas, or a replica and someone's laptop, never both act;
- the policy: `--policy`, else the one the last `steward run` used there, else the default;
- the planner: `rules`, or `llm` — agent.planners.llm.make_planner(policy).

The product never imports the simulator (an import-linter contract): this module reaches it
through its entry point, and everything else sees `Parts` (tools/backends/parts.py).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.approvals.inbox import Inbox
from agent.audit import AuditError, AuditLog, DryRunPlan, new_decision_id, proposals
from agent.daemon.catchup import catch_up
from agent.daemon.config import StewardConfig
from agent.loop.state import Decision
from agent.planners.base import Planner
from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.signals.settings import AssessSettings
from agent.support.leadership import Leadership, LeaseLeadership, Sole
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy
from tools.actions import Plan
from tools.backends.base import MetricSource
from tools.backends.parts import Parts
from tools.backends.plugins import metric_source_at, simulated_backend
from tools.errors import InvalidInput
from tools.model import ClusterState

RUN_FILE = "run.json"


@dataclass(frozen=True)
class Opened:
    """A backend opened for one command, with what the CLI needs to know of it."""

    parts: Parts
    description: str
    """One line for people: which cluster this is."""
    day_s: float | None = None
    """How long the simulated scenario lasts (the built-in day ends by itself); None: unbounded."""
    speed: float | None = None
    """The scenario's pace (simulated seconds per real second); None: real time."""
    elapsed_s: float = 0.0
    """How much of the simulated scenario has already run in this data dir."""
    leadership: Leadership = field(default_factory=Sole)
    """Who may act (see the module docstring); nothing is asked of a Lease before `start()`."""

    @property
    def simulated(self) -> bool:
        return self.parts.advance is not None


def open_backend(config: StewardConfig, data_dir: Path, scenario: Path | None = None) -> Opened:
    """The configured backend and metric sources, opened over `data_dir`."""
    sources = metric_sources(config)
    if config.backend == "sim":
        sim = simulated_backend().open(data_dir, scenario or config.scenario)
        return Opened(
            parts=Parts.of(sim.cluster, sources),
            description=f"simulated cluster {sim.name!r} in {data_dir}",
            day_s=sim.duration_s,
            speed=sim.speed,
            elapsed_s=sim.elapsed_s,
        )
    if scenario is not None:
        raise InvalidInput("--scenario is for the simulated cluster (backend sim) only")
    module = _optional("tools.backends.kubernetes", "the Kubernetes backend")
    cluster = module.open_cluster(config.kubernetes, data_dir)
    holder = module.open_lease(cluster)
    lease = holder.settings
    return Opened(
        parts=Parts.of(cluster, sources),
        description=f"{cluster}, as {lease.identity!r} (Lease {lease.namespace}/{lease.name})",
        leadership=LeaseLeadership(holder, lease.identity, lease.retry_s),
    )


def metric_sources(config: StewardConfig) -> tuple[MetricSource, ...]:
    """The metric sources steward.yaml names (`metrics.sources`), in that order."""
    found: list[MetricSource] = []
    for name in config.metrics.sources:
        if name == "twin":
            found.append(_twin_readings(config))
            continue
        module = _optional(f"tools.metrics.{name}", f"the {name} metric source")
        found.append(module.source_from_config(config.metrics))
    return tuple(found)


def _twin_readings(config: StewardConfig) -> MetricSource:
    """`metrics.sources: [twin]`: the measurements of `steward twin`'s simulated cluster, which
    the Kubernetes API does not carry (what Prometheus gives on a real cluster)."""
    url = config.metrics.twin_url or config.kubernetes.server
    if url is None:
        raise InvalidInput(
            "metrics.sources names twin: set metrics.twin_url (or kubernetes.server) to the "
            "URL `steward twin` printed"
        )
    return metric_source_at("twin", url)


def _optional(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise InvalidInput(f"{what} ({module}) is not in this build") from None


HISTORY_FILES = ("audit.db", "checkpoints.db", "inbox.db", "loop.json", "modes")


def has_history(data_dir: Path) -> bool:
    """Whether anything was decided or recorded in `data_dir` (not just a cluster saved)."""
    return any((data_dir / name).exists() for name in HISTORY_FILES)


def archive(data_dir: Path) -> Path | None:
    """Move everything in `data_dir` (but earlier archives) to archive/<UTC time>/, where the old
    log stays readable (`steward audit verify --data-dir …/archive/<time>`); None if empty."""
    entries = [p for p in data_dir.iterdir() if p.name != ARCHIVE_DIR]
    if not entries:
        return None
    target = data_dir / ARCHIVE_DIR / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target.mkdir(parents=True, exist_ok=False)
    for entry in entries:
        entry.rename(target / entry.name)
    return target


ARCHIVE_DIR = "archive"


def observe_scenario(path: Path) -> ClusterState:
    """What a scenario's cluster looks like at its start, without a data dir (for `policy
    explain --scenario`)."""
    return simulated_backend().observe_scenario(path)


def check_scenario(path: Path) -> None:
    """InvalidInput (FILE:LINE:COL) unless `path` is a valid scenario file or a shipped name."""
    simulated_backend().check_scenario(path)


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


def assess_settings(config: StewardConfig) -> AssessSettings:
    """The thresholds of assess that steward.yaml sets (the policy gives the per-pool ones)."""
    return AssessSettings(metric_max_age_s=config.metrics.max_age_s)


def planner_for(
    name: str,
    policy: Policy,
    llm: Mapping[str, object] | None = None,
    thresholds: AssessSettings | None = None,
) -> Planner:
    """The planner called `name`; the rules planner stays the fallback of any other. `llm`:
    steward.yaml's llm section (the environment applied over it), for the LLM planner;
    `thresholds`: steward.yaml's for assess (`assess_settings`)."""
    if name == "rules":
        return RulesPlanner(RulesSettings.from_policy(policy, thresholds))
    if name == "llm":
        try:
            module = importlib.import_module("agent.planners.llm.planner")
        except ModuleNotFoundError as exc:
            if exc.name not in ("agent.planners.llm", "agent.planners.llm.planner"):
                raise
            raise InvalidInput(
                "--planner llm: the LLM planner (agent/planners/llm/) is not in this build; "
                "use --planner rules"
            ) from None
        planner: Planner = module.make_planner(policy, configured=llm)
        return planner
    raise InvalidInput(f"--planner {name!r}: choose rules or llm")


def dry_run(
    data_dir: Path,
    planner_name: str,
    policy_path: Path | None,
    opened: Opened | None = None,
    llm: Mapping[str, object] | None = None,
    *,
    thresholds: AssessSettings | None = None,
) -> dict[str, Any]:
    """One decision made dry: observe, assess, plan, judge; nothing executed or saved."""
    # The graph's modules (LangGraph, the LLM client) load only for commands that run it.
    from agent.loop.context import LoopContext
    from agent.loop.dry_deliberation import plan_deliberated
    from agent.loop.dry_deliberation import report as deliberated_report
    from agent.loop.nodes import assess, guard, observe
    from agent.loop.nodes import plan as plan_node
    from agent.loop.questions import drifting
    from agent.planners.base import Deliberator
    from agent.signals.memory import read_memory

    parts = (opened or open_backend(StewardConfig(), data_dir)).parts
    policy, _ = open_policy(policy_path or run_policy_path(data_dir))
    settings = RulesSettings.from_policy(policy, thresholds)
    rules = RulesPlanner(settings)
    chosen = planner_for(planner_name, policy, llm, thresholds)
    # A model deliberates the questions of judgment as in the daemon, the rules plan the rest
    # (agent/loop/dry_deliberation.py).
    model = chosen if isinstance(chosen, Deliberator) else None
    try:
        audit = AuditLog.open(data_dir, clock=parts.clock.now)
        catch_up(parts, audit.last_time())  # in memory only: a dry run saves nothing
        writer: str | None = None
    except AuditError as exc:
        audit = AuditLog.open(data_dir, readonly=True)
        writer = str(exc)
    inbox = Inbox.open(data_dir)
    deliberated: tuple[Any, ...] = ()
    try:
        ctx = LoopContext(
            cluster=parts.cluster(),
            parts=parts,
            policy=policy,
            audit=audit,
            inbox=inbox,
            settings=settings,
            planner=chosen,
            fallback=rules,
            crash_at=None,
            hold_denied=False,
        )
        ctx.memory = read_memory(data_dir)
        d = Decision(decision_id=new_decision_id(), dry_run=True)
        d = _step(d, observe(d, ctx))
        d = _step(d, assess(d, ctx))
        assert d.signals is not None and d.observed_at is not None
        seen = d.signals
        questions = seen.shared_card_anomalies or seen.degraded_links or drifting(seen)
        if model is not None and (seen.needs_decision or questions):
            update, deliberated = plan_deliberated(d, ctx, model)
            d = _step(d, update)
            if d.plan is not None and d.plan.actions:
                d = _step(d, guard(d, ctx))
        elif seen.needs_decision:
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
    return {**_report(d, digest, recorded, writer), "deliberated": deliberated_report(deliberated)}


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
                "expected_effect": d.expected_effect(i),
            }
            for i, v in enumerate(d.verdicts)
        ],
        "recorded": recorded,
        "not_recorded": writer,
    }
