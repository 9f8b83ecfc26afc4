"""`steward mode …`: the serving mode of the GX10 pair — status, rotate, resume, journal.

`rotate` goes through the guard like any of the loop's actions (agent/rotation/request.py): the
policy judges it, the decision log records it, a rotation that needs approval waits for
`steward approve`. The transaction itself is tools/modes; its journal lives in the data dir, and
`resume` finishes one that a killed process left open.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.audit import AuditError, AuditLog
from agent.cli.common import (
    EXIT_CHECK_FAILED,
    DataDirOpt,
    JsonOpt,
    PolicyOpt,
    config,
    console,
    data_dir,
    emit_json,
    fail,
    names_a_cluster,
)
from agent.daemon.catchup import catch_up
from agent.daemon.compose import open_backend, open_policy, run_policy_path
from agent.rotation.request import RequestResult, RotationRequests, history_of, judge_rotation
from agent.rotation.runner import advice_settings, open_rotation
from policies.errors import PolicyError
from policies.history import History
from policies.model import Policy
from tools.backends.parts import Parts
from tools.errors import InvalidInput, TemporaryError
from tools.model import ClusterState, Mode
from tools.modes import (
    Journal,
    RotationOutcome,
    Transaction,
    demand_from_state,
    outcome_of,
    plan_rotation,
    rotation_gain,
)

app = typer.Typer(
    help="The GX10 pair's serving mode: status, rotate, resume, journal.", no_args_is_help=True
)

ScenarioOpt = Annotated[
    Path | None,
    typer.Option("--scenario", help="Scenario file for the simulated cluster.", dir_okay=False),
]


def _setup(where: Path, scenario: Path | None, policy: Path | None) -> tuple[Parts, Policy]:
    try:
        parts = open_backend(config(), where, scenario).parts
        the_policy, _ = open_policy(policy or run_policy_path(where))
    except (InvalidInput, PolicyError) as exc:
        fail(str(exc))
    return parts, the_policy


@contextmanager
def _requests(where: Path, parts: Parts, policy: Policy) -> Iterator[RotationRequests]:
    """Rotation requests on the data dir's decision log, opened as its writer and closed after;
    what they raise becomes the exit it means: 2 for bad input, 1 for a log or a cluster that
    refused."""
    try:
        log = AuditLog.open(where, clock=parts.clock.now)
    except AuditError as exc:
        fail(f"{exc} (with the agent running, ask it for the rotation instead)", EXIT_CHECK_FAILED)
    catch_up(parts, log.last_time())  # records never go back before the log's last one
    try:
        yield RotationRequests(parts, where, policy, log)
    except InvalidInput as exc:
        fail(str(exc))
    except (AuditError, TemporaryError) as exc:
        fail(str(exc), EXIT_CHECK_FAILED)
    finally:
        log.close()


@app.command("status")
@names_a_cluster
def status(
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
    scenario: ScenarioOpt = None,
    policy: PolicyOpt = None,
) -> None:
    """The active mode, each mode's workloads and figures, the link, the last and any open
    rotation, and whether rotating would pay now."""
    where = data_dir(data_dir_opt)
    parts, the_policy = _setup(where, scenario, policy)
    state = parts.cluster().observe()
    try:
        found = Journal.open(where).transactions()
    except InvalidInput as exc:
        fail(str(exc))
    last = next((t for t in reversed(found) if t.finished), None)
    open_txn = found[-1] if found and not found[-1].finished else None
    advice = rotation_gain(state, demand_from_state(state), advice_settings(the_policy))
    doc: dict[str, Any] = {
        "active_mode": state.active_mode.name if state.active_mode else None,
        "since": state.active_mode.since if state.active_mode else None,
        "observed_at": state.observed_at,
        "modes": [_mode_doc(state, m) for m in state.modes],
        "links": [
            {
                "link": link.name,
                "configured_gid_index": link.configured_gid_index,
                "paths": [
                    {
                        "path": p.name,
                        "nominal_gbps": p.nominal_gbps,
                        "negotiated_gbps": p.negotiated_gbps.value,
                        "gid_index": p.gid_index.value,
                    }
                    for p in link.paths
                ],
            }
            for link in state.links
        ],
        "last_rotation": outcome_of(last) if last else None,
        "open_rotation": _open_doc(open_txn) if open_txn else None,
        "advice": advice,
    }
    if json_out:
        emit_json(doc)
        return
    active = doc["active_mode"] or "none (no mode has every workload serving)"
    console.print(
        f"[bold]mode[/bold] {active}" + (f" since {doc['since']}" if doc["since"] else "")
    )
    for m in doc["modes"]:
        workloads = ", ".join(
            f"{w['name']} {w['ready']}/{w['desired']} ready" for w in m["workloads"]
        )
        console.print(
            f"  {m['name']:<8} {workloads} — {m['aggregate_peak_tok_s']:g} tok/s peak, "
            f"{m['single_stream_tok_s']:g} single stream, {m['max_context']:,} context"
        )
    for link in doc["links"]:
        paths = ", ".join(
            f"{p['path']} {_num(p['negotiated_gbps'])}/{p['nominal_gbps']:g} Gb/s "
            f"GID {_num(p['gid_index'])}"
            for p in link["paths"]
        )
        console.print(
            f"  link {link['link']}: {paths} (GID expected {link['configured_gid_index']})"
        )
    if last is not None:
        console.print(f"last rotation: {_outcome_line(outcome_of(last))}")
    if doc["open_rotation"]:
        o = doc["open_rotation"]
        console.print(
            f"[red]open rotation[/red] {o['txn']} stopped at {o['step']} ({o['status']}): "
            "run `steward mode resume`"
        )
    verb = "rotate" if advice.rotate else "stay"
    console.print(f"advice: {verb} — {advice.reason}")


@app.command("rotate")
@names_a_cluster
def rotate(  # noqa: PLR0917 - typer maps each option to a parameter
    target: Annotated[str, typer.Argument(help="The mode to rotate to (e.g. split, cluster).")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Judge and preflight only; change and record nothing.")
    ] = False,
    decision: Annotated[
        str | None,
        typer.Option("--decision", help="Run a rotation that waited for approval, once approved."),
    ] = None,
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
    scenario: ScenarioOpt = None,
    policy: PolicyOpt = None,
) -> None:
    """Rotate the GX10 pair to TARGET: judged by the policy, recorded, drained, switched,
    probed, committed — or rolled back. Exit 0 when TARGET serves, 1 when it does not."""
    where = data_dir(data_dir_opt)
    parts, the_policy = _setup(where, scenario, policy)
    if dry_run:
        _dry_run(parts, where, the_policy, target, json_out)
        return
    with _requests(where, parts, the_policy) as requests:
        result = requests.answered(decision, target) if decision else requests.request(target)
    _print_result(result, json_out)
    if result.outcome is None or result.outcome.result != "committed":
        raise typer.Exit(EXIT_CHECK_FAILED)


@app.command("resume")
@names_a_cluster
def resume(
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
    policy: PolicyOpt = None,
) -> None:
    """Finish a rotation a killed process left open: its commit, or its rollback."""
    where = data_dir(data_dir_opt)
    parts, the_policy = _setup(where, None, policy)
    with _requests(where, parts, the_policy) as requests:
        outcome = requests.finish_open()
    if json_out:
        emit_json({"resumed": outcome})
    elif outcome is None:
        console.print("no rotation was open")
    else:
        console.print(f"resumed: {_outcome_line(outcome)}")
    if outcome is not None and outcome.final_mode is None:
        raise typer.Exit(EXIT_CHECK_FAILED)


@app.command("journal")
def journal(
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
    last: Annotated[int, typer.Option("--last", min=1, help="Show the last N rotations.")] = 5,
) -> None:
    """Every step of the last rotations, as the journal recorded it."""
    where = data_dir(data_dir_opt)
    try:
        found = Journal.open(where).transactions()[-last:]
    except InvalidInput as exc:
        fail(str(exc))
    if json_out:
        emit_json([{"txn": t.txn, "entries": t.entries} for t in found])
        return
    if not found:
        console.print(f"no rotation in {where}")
    for t in found:
        console.print(f"[bold]{t.txn}[/bold]")
        for e in t.entries:
            what = e.step or e.kind
            state = e.status or e.result or ""
            console.print(f"  {e.at.isoformat()} {what:<9} {state:<11} {e.message}")


def _dry_run(parts: Parts, where: Path, policy: Policy, target: str, json_out: bool) -> None:
    state = parts.cluster().observe()
    if state.mode(target) is None:
        known = ", ".join(m.name for m in state.modes) or "none"
        fail(f"mode {target!r} does not exist (known: {known})")
    try:
        audit = AuditLog.open(where, readonly=True)
        history = history_of(audit, state)
        audit.close()
    except AuditError:
        history = History()
    _, verdict = judge_rotation(target, state, policy, history)
    report = open_rotation(parts.cluster(), where, policy, parts=parts).check(target)
    plan = plan_rotation(state, target)
    doc = {"verdict": verdict, "preflight": report, "ok": report.ok, "plan": plan}
    if json_out:
        emit_json(doc)
    else:
        console.print(
            f"[bold]{verdict.decision}[/bold] rotate to {target} — {verdict.message} "
            f"(rules: {', '.join(verdict.rule_ids) or '-'})"
        )
        console.print(
            f"  would stop: {', '.join(plan.outgoing) or 'nothing'}; would start: "
            f"{', '.join(plan.incoming)}"
        )
        for check in report.checks:
            mark = "ok  " if check.ok else "FAIL"
            console.print(f"  {mark} {check.message}")
    if verdict.decision == "deny" or not report.ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _num(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _print_result(result: RequestResult, json_out: bool) -> None:
    if json_out:
        emit_json(result)
        return
    console.print(f"decision {result.decision_id}: {result.status} — {result.message}")
    if result.outcome is not None:
        console.print(_outcome_line(result.outcome))


def _outcome_line(o: RotationOutcome) -> str:
    degraded = " (degraded)" if o.degraded else ""
    return (
        f"{o.txn} {o.from_mode or 'nothing'} -> {o.to_mode}: {o.result}{degraded}, "
        f"{o.final_mode or 'nothing'} serves; {o.duration_s:.0f} s, switch window "
        f"{o.window_s:.0f} s, {o.aborted_requests} request(s) aborted — {o.message}"
    )


def _mode_doc(state: ClusterState, mode: Mode) -> dict[str, Any]:
    workloads = []
    for w in mode.workloads:
        found = state.workload(w)
        workloads.append(
            {
                "name": w,
                "desired": found.desired_replicas if found else 0,
                "ready": found.ready_replicas if found else 0,
            }
        )
    return {
        "name": mode.name,
        "workloads": workloads,
        "aggregate_peak_tok_s": mode.aggregate_peak_tok_s,
        "single_stream_tok_s": mode.single_stream_tok_s,
        "max_context": mode.max_context,
    }


def _open_doc(t: Transaction) -> dict[str, Any]:
    last = t.last_step()
    return {
        "txn": t.txn,
        "step": last.step if last else "begin",
        "status": last.status if last else "started",
        "since": t.begin.at,
    }
