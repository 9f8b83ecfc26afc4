"""`steward policy check|explain`.

`check FILE` validates a policy file: exit 0, or exit 2 with one `FILE:LINE:COL: message` line
per problem on stdout (so scripts can read them). `explain --action JSON` judges one action (or a
list of them, as one plan) against a cluster state — the simulated cluster in --data-dir, or a
scenario's — and prints each verdict, the rules that decided it and what would have passed.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from agent.capacity.release import DIP_PERCENTILE, GAP_MARGIN, HISTORY_S
from agent.cli.common import (
    EXIT_BAD_INPUT,
    DataDirOpt,
    JsonOpt,
    config,
    console,
    data_dir,
    emit_json,
    fail,
    names_a_cluster,
)
from policies.durations import format_duration
from policies.engine import judge
from policies.errors import PolicyError
from policies.history import History
from policies.judgement import Judgement
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy
from tools.actions import Plan, parse_actions
from tools.errors import InvalidInput
from tools.model import ClusterState

app = typer.Typer(help="Check policy files and explain verdicts.", no_args_is_help=True)

PolicyOpt = Annotated[
    Path,
    typer.Option("--policy", help="The policy file.", dir_okay=False),
]


@app.command("check")
def check(
    file: Annotated[Path, typer.Argument(help="The policy file to check.", dir_okay=False)],
    as_json: JsonOpt = False,
) -> None:
    """Validate a policy: exit 0, or exit 2 with one FILE:LINE:COL: message line per problem."""
    try:
        policy = load_policy(file)
    except PolicyError as exc:
        if as_json:
            problems = [
                {"file": p.file, "line": p.line, "column": p.column, "message": p.message}
                for p in exc.problems
            ]
            emit_json({"file": str(file), "ok": False, "problems": problems})
        else:
            for problem in exc.problems:
                typer.echo(str(problem))
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    summary = {
        "file": str(file),
        "ok": True,
        "pools": sorted(policy.pools),
        "approval_rules": [r.name for r in policy.approvals],
        "windows": [w.name for w in policy.windows],
        "timezone": policy.timezone,
        "explained": explained(policy),
    }
    if as_json:
        emit_json(summary)
        return
    console.print(
        f"{file}: ok — {len(policy.pools)} pools ({', '.join(sorted(policy.pools))}), "
        f"{len(policy.approvals)} approval rules, {len(policy.windows)} windows, "
        f"timezone {policy.timezone}",
        highlight=False,
    )
    for line in explained(policy):
        console.print(f"  {line}", highlight=False, markup=False)


def explained(policy: Policy) -> list[str]:
    """The capacity keys in plain words: SLOs, keep times, cooldowns by direction, budgets."""
    lines: list[str] = []
    for pool, slo in policy.slo.items():
        parts = []
        if slo.ttft_s is not None:
            parts.append(f"first token within {slo.ttft_s:g} s")
        if slo.itl_s is not None:
            parts.append(f"{slo.itl_s * 1000:g} ms between tokens")
        if slo.queue_wait_s is not None:
            parts.append(f"queue wait {slo.queue_wait_s:g} s (a signal; no scale-down above it)")
        sized = (
            "; its profiled workloads are sized by the capacity model"
            if slo.ttft_s is not None
            else ""
        )
        lines.append(f"slo.{pool}: {', '.join(parts)}{sized}")
    sized_pools = [pool for pool, slo in policy.slo.items() if slo.ttft_s is not None]
    if sized_pools:
        r = policy.reactive
        lines.append(
            f"reactive (pools {', '.join(sized_pools)}): replicas are added at once, whatever the "
            f"forecast said, when a KV cache is {r.kv_usage:.0%} used or more "
            f"(reactive.kv_usage), a TTFT reading is above {r.ttft_share:.0%} of ttft_s "
            f"(reactive.ttft_share), an ITL reading is above {r.itl_share:.0%} of itl_s "
            "(reactive.itl_share) or more requests run per replica than the largest batch "
            f"within itl_s, or requests wait on {r.waiting_readings} reading(s) in a row "
            "(reactive.waiting_readings)"
        )
    for name, limits in policy.pools.items():
        if limits.keep_loads != 1.0 or name in policy.slo:
            lines.append(
                f"pools.{name}.keep_loads: a replica unneeded for {limits.keep_loads:g} model "
                "load(s), or for its usual dip if longer, is given back; zero only after no "
                "arrival for that long or the usual idle gap, if longer"
            )
            lines.append(
                f"pools.{name}.keep_loads: the usual dip below its replicas is {GAP_MARGIN:g} x "
                f"the {DIP_PERCENTILE * 100:.0f}th percentile of its dips over the last "
                f"{HISTORY_S / 60:.0f} minutes"
            )
    for direction, wait in policy.cooldowns.by_direction.items():
        way = "growth" if direction == "scale_up" else "a scale-down"
        lines.append(
            f"cooldowns.by_direction.{direction}: {way} waits {format_duration(wait)} after "
            "the workload's last scale, either way"
        )
    budget = policy.change_budget
    if budget.cards_per_hour is not None:
        lines.append(
            f"change_budget.cards_per_hour: at most {budget.cards_per_hour} card(s) changed in "
            "any hour, up or down"
        )
    return lines


@app.command("explain")
@names_a_cluster
def explain(  # typer passes options by name
    *,
    action: Annotated[
        str,
        typer.Option(
            "--action",
            help="An action (or a list, judged as one plan) as JSON, e.g. "
            '\'{"type": "scale_workload", "workload": "render", "replicas": 0}\'.',
        ),
    ],
    scenario: Annotated[
        Path | None,
        typer.Option(
            "--scenario", help="Judge against this scenario's start state.", dir_okay=False
        ),
    ] = None,
    policy_file: PolicyOpt = DEFAULT_POLICY,
    at: Annotated[
        datetime | None,
        typer.Option("--at", help="Judge at this time (ISO 8601); default: the observation's."),
    ] = None,
    data_dir_opt: DataDirOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Judge an action against the cluster state and print the verdict and the rules."""
    policy = _policy(policy_file)
    plan = _plan(action)
    state, source = _state(scenario, data_dir_opt)
    history = _history(data_dir_opt, state, policy)
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=policy.zone)
    judgement = judge(plan, state, policy, history, now=at)
    if as_json:
        emit_json(
            {
                "policy": str(policy_file),
                "state": source,
                "now": judgement.now,
                "local_time": policy.local(judgement.now).isoformat(),
                "verdicts": [v.model_dump(mode="json") for v in judgement.verdicts],
                "findings": [f.model_dump(mode="json") for f in judgement.findings],
            }
        )
        return
    _print(judgement, policy, policy_file, source)


def _policy(path: Path) -> Policy:
    try:
        return load_policy(path)
    except PolicyError as exc:
        fail(f"the policy is not usable:\n{exc}")


MAX_ACTION_CHARS = 64_000


def _plan(text: str) -> Plan:
    if len(text) > MAX_ACTION_CHARS:
        fail(f"--action is {len(text):,} characters; an action is a small JSON object")
    try:
        data: Any = json.loads(text)
    except RecursionError:
        fail("--action nests too deeply; an action is one flat JSON object with a type")
    except json.JSONDecodeError as exc:
        fail(
            f"--action is not JSON ({exc.msg} at column {exc.colno}); pass e.g. "
            '\'{"type": "scale_workload", "workload": "render", "replicas": 0}\''
        )
    try:
        actions = parse_actions(data if isinstance(data, list) else [data])
    except ValidationError as exc:
        lines = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        fail(f"--action is not a valid action: {lines}")
    return Plan(actions=tuple(actions), planner="cli")


def _state(scenario: Path | None, option: Path | None) -> tuple[ClusterState, str]:
    from agent.daemon.compose import observe_scenario, open_backend

    try:
        if scenario is not None:
            return observe_scenario(scenario), str(scenario)
        directory = data_dir(option)
        opened = open_backend(config(), directory)
        return opened.parts.cluster().observe(), opened.description
    except InvalidInput as exc:
        fail(str(exc))


def _history(option: Path | None, state: ClusterState, policy: Policy) -> History:
    """Executed actions of the last day from the decision log, if there is one."""
    directory = data_dir(option)
    history = History()
    try:
        from agent.audit import DB_NAME, AuditLog
    except ImportError:  # the decision log is optional for explaining
        return history.observed(state, policy)
    if (directory / DB_NAME).is_file():
        log = AuditLog.open(directory, readonly=True)
        try:
            history = log.history(state.observed_at)
        finally:
            log.close()
    return history.observed(state, policy)


def _print(judgement: Judgement, policy: Policy, policy_file: Path, source: str) -> None:
    local = policy.local(judgement.now)
    console.print(
        f"policy {policy_file}, state: {source}, at {local:%Y-%m-%d %H:%M} {policy.timezone}",
        highlight=False,
    )
    for v in judgement.verdicts:
        colour = {"allow": "green", "deny": "red", "needs_approval": "yellow"}[v.decision]
        console.print(f"#{v.index + 1} {v.action.describe()}", highlight=False)
        console.print(f"  decision: [{colour}]{v.decision}[/{colour}]", highlight=False)
        console.print(f"  rules:    {', '.join(v.rule_ids)}", highlight=False)
        console.print(f"  why:      {v.message}", highlight=False, soft_wrap=True)
        if v.allowed_instead is not None:
            console.print(f"  instead:  {v.allowed_instead.describe()}", highlight=False)
        if v.approvers:
            console.print(f"  approvers: {', '.join(v.approvers)}", highlight=False)
    for f in judgement.findings:
        actions = ", ".join(f"#{i + 1}" for i in f.actions)
        console.print(f"plan: {f.rule_id} ({actions}): {f.message}", highlight=False)
