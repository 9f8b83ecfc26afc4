"""`steward run`, `plan`, `pending`, `approve`, `deny` — and `steward bench loop`.

`run` is the unattended agent (agent/daemon/runtime.py). `plan` is the same decision made dry:
observe, assess, plan, judge, print — nothing executed, nothing saved, one dry-run record in the
log when the log is free to write. `pending` / `approve` / `deny` answer decisions that wait for
a human; the running daemon (or the next `run`) resumes them.
"""

from __future__ import annotations

import getpass
import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from agent.approvals.inbox import Inbox
from agent.cli import bench
from agent.cli.common import (
    EXIT_CHECK_FAILED,
    DataDirOpt,
    JsonOpt,
    console,
    data_dir,
    emit_json,
    err_console,
    fail,
)
from agent.daemon.compose import (
    dry_run,
    open_policy,
    open_sim,
    planner_for,
    run_policy_path,
)
from agent.daemon.logs import configure_logging
from agent.planners.errors import PlannerFailed
from policies.errors import PolicyError
from tools.errors import InvalidInput, PermanentError

PolicyOpt = Annotated[
    Path | None,
    typer.Option("--policy", help="Policy file (default: policies/default.yaml).", dir_okay=False),
]
PlannerOpt = Annotated[
    str, typer.Option("--planner", help="rules (deterministic) or llm (falls back to rules).")
]


MAX_INTERVAL_S = 3600.0
"""An hour between ticks at most: a longer tick never finishes a decision in useful time."""
MAX_SPEED = 100_000.0


def _finite(value: float) -> float:
    """Refuse NaN (which passes every min/max check) and infinities, as bad input (exit 2)."""
    if not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def register(app: typer.Typer) -> None:
    """Add run, plan, pending, approve and deny to the root app."""
    app.command("run")(run)
    app.command("plan")(plan)
    app.command("pending")(pending)
    app.command("approve")(approve)
    app.command("deny")(deny)


def run(  # noqa: PLR0917 - typer maps each option to a parameter
    data_dir_opt: DataDirOpt = None,
    scenario: Annotated[
        Path | None,
        typer.Option("--scenario", help="Scenario file for the simulated cluster.", dir_okay=False),
    ] = None,
    policy: PolicyOpt = None,
    ticks: Annotated[
        int | None, typer.Option("--ticks", min=1, help="Stop after N ticks (default: the day).")
    ] = None,
    speed: Annotated[
        float,
        typer.Option(
            "--speed",
            min=0,
            max=MAX_SPEED,
            callback=_finite,
            help="Simulated seconds per real second; 0: flat out.",
        ),
    ] = 60.0,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            min=0.1,
            max=MAX_INTERVAL_S,
            callback=_finite,
            help="Seconds between ticks (simulated).",
        ),
    ] = 15.0,
    planner: PlannerOpt = "rules",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="/healthz and /metrics; 0: off.")
    ] = 0,
) -> None:
    """Run the agent: observe, decide, guard, act, verify, record — tick after tick.

    With no configuration it runs the embedded homelab through a built-in day of demand,
    compressed so that decisions show within seconds, and stops at the end of the day.
    """
    from agent.daemon.runtime import Runtime  # LangGraph loads only for the commands that run it
    from agent.daemon.telemetry import Telemetry

    configure_logging()
    where = data_dir(data_dir_opt)
    try:
        sim = open_sim(where, scenario)
        the_policy, policy_path = open_policy(policy)
        chosen = planner_for(planner, the_policy)
        telemetry = Telemetry()
        runtime = Runtime.open(where, sim, the_policy, planner=chosen, telemetry=telemetry)
    except (InvalidInput, PolicyError, PlannerFailed) as exc:
        fail(str(exc))
    except PermanentError as exc:
        fail(str(exc), EXIT_CHECK_FAILED)
    (where / "run.json").write_text(json.dumps({"policy": str(policy_path)}))
    server = telemetry.serve(port) if port else None
    if server:
        err_console.print(f"serving /healthz and /metrics on 127.0.0.1:{server.server_port}")
    day_ticks = int(sim.scenario.duration_s // interval)
    try:
        runtime.install_signal_handlers()
        runtime.start()
        reports = runtime.run(ticks if ticks is not None else day_ticks, interval, speed)
    finally:
        runtime.close()
        if server:
            server.shutdown()
    decided = sum(1 for r in reports if r.decided)
    executed = sum(r.executed for r in reports)
    err_console.print(
        f"{len(reports)} tick(s), {decided} decision(s), {executed} action(s) executed; "
        f"the log and the cluster are in {where}"
    )


def plan(
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
    planner: PlannerOpt = "rules",
    policy: PolicyOpt = None,
) -> None:
    """Dry-run planning: what the agent would do now, and what the policy says — nothing runs."""
    configure_logging()  # logs to stderr: with --json, stdout holds the JSON document alone
    where = data_dir(data_dir_opt)
    try:
        result = dry_run(where, planner, policy)
    except (InvalidInput, PolicyError, PlannerFailed) as exc:
        fail(str(exc))
    if json_out:
        emit_json(result)
        return
    console.print(f"[bold]plan[/bold] {result['decision_id']} at {result['observed_at']} (dry run)")
    lines = [f"  finding: {finding}" for finding in result["findings"]]
    if result["fallback_reason"]:
        lines.append(
            f"  the {planner} planner failed ({result['fallback_reason']}); "
            f"the {result['planner']} planner decided"
        )
    if not result["actions"]:
        lines.append(f"  no action: {result['rationale'] or 'nothing to decide'}")
    for a in result["actions"]:
        lines += [
            f"  [{a['verdict']}] {a['describe']} — rules: {', '.join(a['rule_ids']) or '-'}",
            f"      why: {a['reason']}",
            f"      policy: {a['message']}",
            f"      expected: {a['expected_effect']}",
        ]
    for line in lines:
        console.print(line, markup=False, highlight=False)
    if result["recorded"] is None:
        err_console.print(f"not recorded in the decision log: {result['not_recorded']}")
    else:
        console.print(f"recorded as dry-run plan, log seq {result['recorded']}")


def pending(json_out: JsonOpt = False, data_dir_opt: DataDirOpt = None) -> None:
    """Decisions that wait for a human, with the actions and the rules that hold them."""
    inbox = Inbox.open(data_dir(data_dir_opt))
    try:
        waiting = inbox.listed("waiting")
    finally:
        inbox.close()
    if json_out:
        emit_json([p.model_dump(mode="json") for p in waiting])
        return
    if not waiting:
        console.print("nothing waits for approval")
    for p in waiting:
        console.print(f"[bold]{p.decision_id}[/bold] since {p.created_at.isoformat()}")
        for action, message in zip(p.actions, p.messages, strict=True):
            console.print(f"  {action.describe()} — {message}", markup=False, highlight=False)


def approve(
    decision_id: Annotated[str, typer.Argument(help="The decision id `steward pending` shows.")],
    as_name: Annotated[
        str | None, typer.Option("--as", help="Who approves (default: your user name).")
    ] = None,
    data_dir_opt: DataDirOpt = None,
    policy: PolicyOpt = None,
) -> None:
    """Approve a waiting decision; the running agent carries it out on its next tick."""
    _answer(decision_id, approved=True, by=as_name, reason="", where=data_dir_opt, policy=policy)


def deny(
    decision_id: Annotated[str, typer.Argument(help="The decision id `steward pending` shows.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in the decision log).")],
    as_name: Annotated[
        str | None, typer.Option("--as", help="Who denies (default: your user name).")
    ] = None,
    data_dir_opt: DataDirOpt = None,
    policy: PolicyOpt = None,
) -> None:
    """Deny a waiting decision; its actions are dropped and the log says who and why."""
    _answer(
        decision_id, approved=False, by=as_name, reason=reason, where=data_dir_opt, policy=policy
    )


def _answer(
    decision_id: str,
    *,
    approved: bool,
    by: str | None,
    reason: str,
    where: Path | None,
    policy: Path | None,
) -> None:
    root = data_dir(where)
    principal = by or getpass.getuser()
    try:
        the_policy, _ = open_policy(policy or run_policy_path(root))
    except PolicyError as exc:
        fail(str(exc))
    inbox = Inbox.open(root)
    try:
        found = inbox.get(decision_id)
        if found is None or found.status != "waiting":
            # Raises the error that names what is wrong: unknown, or already answered.
            inbox.answer(decision_id, approved=approved, by=principal, reason=reason, at=_now())
            return
        sim = open_sim(root, None)
        state = sim.observe()
        refused = [a for a in found.actions if not the_policy.may_approve(principal, a, state)]
        if refused:
            groups = sorted({g for a in refused for g in the_policy.approver_groups(a, state)})
            fail(
                f"{principal} may not answer decision {decision_id}: "
                f"{'; '.join(a.describe() for a in refused)} needs a member of "
                f"{', '.join(groups) or 'an approver group'} (policy approvers); "
                "pass --as NAME of an approver",
                EXIT_CHECK_FAILED,
            )
        inbox.answer(decision_id, approved=approved, by=principal, reason=reason, at=_now())
    except InvalidInput as exc:
        fail(str(exc))
    finally:
        inbox.close()
    verb = "approved" if approved else "denied"
    console.print(
        f"{decision_id} {verb} by {principal}; the running agent resumes it on its next tick "
        "(or the next `steward run`)"
    )


def _now() -> datetime:
    return datetime.now(UTC)


@bench.app.command("loop")
def bench_loop(
    nodes: Annotated[int, typer.Option("--nodes", min=1, help="Fleet size for the tick.")] = 1000,
    runs: Annotated[int, typer.Option("--runs", min=5, help="Timed ticks per figure.")] = 50,
    json_out: JsonOpt = False,
) -> None:
    """One tick of the loop with the rules planner on a fleet, and an idle homelab tick."""
    from evals.bench.loop import bench_figures

    figures = bench_figures(nodes, runs)
    if json_out:
        emit_json(figures)
        return
    for name, value in figures.items():
        console.print(f"{name}: {value}")
    sys.stdout.flush()
