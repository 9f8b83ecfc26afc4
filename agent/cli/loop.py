"""`steward run` and `plan`.

`run` is the unattended agent (agent/daemon/runtime.py). `plan` is the same decision made dry:
observe, assess, plan, judge, print — nothing executed, nothing saved, one dry-run record in the
log when the log is free to write. Answers to waiting decisions are agent/cli/answers.py's.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import structlog
import typer

from agent.approvals.channel import CliChannel
from agent.approvals.inbox import PendingDecision
from agent.chatops.access import with_slack_approvers
from agent.cli.common import (
    EXIT_CHECK_FAILED,
    BackendOpt,
    ContextOpt,
    DataDirOpt,
    JsonOpt,
    KubeconfigOpt,
    PolicyOpt,
    ResetOpt,
    console,
    data_dir,
    emit_json,
    err_console,
    fail,
    reset_data_dir,
    with_backend,
    with_flags,
)
from agent.daemon.compose import (
    Opened,
    assess_settings,
    dry_run,
    open_backend,
    open_policy,
    planner_for,
)
from agent.daemon.config import StewardConfig, masked
from agent.daemon.logs import configure_logging
from agent.planners.errors import PlannerFailed
from agent.support.notices import Notifier, notifier_for
from policies.errors import PolicyError
from policies.model import Policy
from tools.errors import InvalidInput, PermanentError

if TYPE_CHECKING:  # the runtime (and LangGraph) load only for the commands that run it
    from agent.chatops.service import SlackService
    from agent.daemon.report import RunSummary, TickReport
    from agent.daemon.runtime import Runtime
    from agent.support.telemetry import Telemetry

PlannerOpt = Annotated[
    str | None,
    typer.Option("--planner", help="rules (deterministic) or llm (falls back to rules)."),
]


MAX_INTERVAL_S = 86_400.0
"""A day between ticks at most, as steward.yaml's loop.interval_s allows."""
MAX_SPEED = 100_000.0


def _finite(value: float | None) -> float | None:
    """Refuse NaN (which passes every min/max check) and infinities, as bad input (exit 2)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def register(app: typer.Typer) -> None:
    """Add run and plan to the root app."""
    app.command("run")(run)
    app.command("plan")(plan)


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
    forever: Annotated[
        bool,
        typer.Option("--forever", help="Run until stopped, also past a simulated day's end."),
    ] = False,
    speed: Annotated[
        float | None,
        typer.Option(
            "--speed",
            min=0,
            max=MAX_SPEED,
            callback=_finite,
            help="Simulated seconds per real second; 0: flat out (sim only).",
        ),
    ] = None,
    interval: Annotated[
        float | None,
        typer.Option(
            "--interval",
            min=0.1,
            max=MAX_INTERVAL_S,
            callback=_finite,
            help="Seconds between ticks (default: steward.yaml, 15).",
        ),
    ] = None,
    planner: PlannerOpt = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=0, max=65535, help="/healthz and /metrics; 0: off."),
    ] = None,
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    kube_context: ContextOpt = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            help="Metric sources, comma-separated (prometheus, nvml); default: steward.yaml.",
        ),
    ] = None,
    json_out: JsonOpt = False,
    reset: ResetOpt = False,
) -> None:
    """Run the agent: observe, decide, guard, act, verify, record — tick after tick.

    With no configuration it runs the embedded homelab through a built-in day of demand,
    compressed so that decisions show within seconds, and stops at the end of the day. On a
    configured cluster (steward.yaml, `--backend kubernetes`) it runs until stopped.
    """
    from agent.daemon.runtime import Runtime  # LangGraph loads only for the commands that run it
    from agent.support.telemetry import Telemetry

    configure_logging()
    # Every flag that stands for a key of steward.yaml goes over it as that key's source, as
    # `steward config show` prints them: the run's `configuration` line says which won.
    settings = with_flags(
        _with_metrics(with_backend(backend), metrics),
        {
            "listen.port": ("--port", port),
            "interval_s": ("--interval", interval),
            "planner": ("--planner", planner),
            "policy": ("--policy", policy),
            "scenario": ("--scenario", scenario),
            "data_dir": ("--data-dir", data_dir_opt),
        },
    )
    log_configuration(settings)
    listen_port = settings.listen.port
    problems = _slack_problems(settings, listen_port)
    if problems:
        fail("\n".join(problems))
    where = data_dir(data_dir_opt)
    if reset:
        reset_data_dir(where)
    try:
        opened = open_backend(settings, where, scenario)
        the_policy, policy_path = open_policy(settings.policy)
        if settings.slack.enabled:  # Slack users join the policy's approver groups
            the_policy = with_slack_approvers(the_policy, settings.slack)
        thresholds = assess_settings(settings)
        chosen = planner_for(
            settings.planner,
            the_policy,
            settings.llm.model_dump(exclude_none=True),
            thresholds,
        )
        telemetry = Telemetry()
        runtime = Runtime.open(
            where,
            opened.parts,
            the_policy,
            planner=chosen,
            telemetry=telemetry,
            leadership=opened.leadership,
            notifier=_notifier(settings),
            thresholds=thresholds,
            witness=settings.audit.witness,
        )
    except (InvalidInput, PolicyError, PlannerFailed) as exc:
        fail(str(exc))
    except PermanentError as exc:
        fail(str(exc), EXIT_CHECK_FAILED)
    (where / "run.json").write_text(json.dumps({"policy": str(policy_path)}))
    check_planner(runtime)
    step = settings.interval_s
    if not math.isfinite(step):
        runtime.close()
        fail(f"--interval {step}: give a finite number of seconds (0.1 to 86400)")
    pace = speed if speed is not None else (60.0 if opened.simulated else 1.0)
    limit = ticks
    if limit is None and opened.day_s is not None and not forever:
        limit = int(max(0.0, opened.day_s - opened.elapsed_s) // step)
        if limit == 0:
            runtime.close()
            _day_over(where, opened, json_out)
            return
    progress = Progress(limit) if err_console.is_terminal and not json_out else None
    chat, server = None, None
    try:
        if settings.slack.enabled:  # before the port opens, so Slack never meets a 404 there
            chat = _start_slack(settings, runtime, telemetry, policy_path)
        try:
            server = telemetry.serve(listen_port, settings.listen.host) if listen_port else None
        except OSError as exc:
            fail(
                f"cannot serve /healthz and /metrics on {settings.listen.host}:{listen_port}: "
                f"{exc.strerror}; is another steward running? choose another --port (0: off)"
            )
        if server:
            err_console.print(
                f"serving /healthz and /metrics on {settings.listen.host}:{server.server_port}"
            )
        runtime.install_signal_handlers()
        runtime.start()
        summary = runtime.run(limit, step, pace, on_tick=progress.update if progress else None)
        waiting = runtime.ctx.inbox.listed("waiting")
    except (InvalidInput, PolicyError) as exc:
        fail(str(exc))
    except PermanentError as exc:
        fail(str(exc), EXIT_CHECK_FAILED)
    finally:
        if progress is not None:
            progress.done()
        if chat is not None:
            chat.stop()
        runtime.close()
        if server:
            server.shutdown()
    _summary(summary, waiting, where, json_out, the_policy)


def log_configuration(settings: StewardConfig) -> None:
    """One line at start: where the configuration came from and each key set there (not its
    default), with its source — `flag --port`, `environment STEWARD_…`, `file steward.yaml` —
    secrets masked, as `steward config show` prints them."""
    shown = masked(settings)
    keys = {}
    for key in sorted(settings.origins):
        value: object = shown
        for name in key.split("."):
            value = value.get(name) if isinstance(value, dict) else None
        keys[key] = {"value": value, "source": settings.origins[key]}
    text = ", ".join(f"{key}={v['value']} ({v['source']})" for key, v in keys.items())
    structlog.get_logger("steward.config").info(
        "configuration",
        text=f"{settings.source}: {text}" if text else "every key at its default",
        source=settings.source,
        keys=keys,
    )


def check_planner(runtime: Runtime) -> None:
    """A model's endpoint is asked once before the first tick: when it does not answer, one
    warning says why. The rules plan every tick whatever the model does; a planner that is not
    a deliberator rests until the planner's rest is over, while a deliberation keeps its own
    deadline (and falls back at it, counted in the run's summary)."""
    from agent.loop.nodes import PLANNER_REST

    ctx = runtime.ctx
    model = ctx.deliberations.model if ctx.deliberations is not None else ctx.planner
    probe = getattr(model, "probe", None)
    if model is ctx.fallback or probe is None:
        return
    why = probe()
    if why is None:
        return
    structlog.get_logger("steward.planner").warning(
        f"the {model.name} planner's endpoint does not answer; the rules planner decides",
        endpoint=getattr(getattr(model, "endpoint", None), "base_url", None),
        cause=why,
        retry_in_s=PLANNER_REST.total_seconds(),
    )
    if ctx.deliberations is not None:
        return  # the rules plan every tick anyway; each deliberation keeps its own deadline
    ctx.planner_failure = f"its endpoint did not answer at start: {why}"
    ctx.planner_resting_until = runtime.parts.clock.now() + PLANNER_REST


def _day_over(where: Path, opened: Opened, json_out: bool) -> None:
    message = (
        f"the simulated day in {where} is over ({opened.elapsed_s:.0f} of {opened.day_s:.0f} s "
        "ran): nothing left to simulate. Use --forever to go on past its end, --ticks N for N "
        "more ticks, or another --data-dir for a new day"
    )
    if json_out:
        emit_json({"ticks": 0, "day_over": True, "message": message})
    else:
        console.print(message, markup=False, highlight=False, soft_wrap=True)


def _summary(
    summary: RunSummary,
    waiting: list[PendingDecision],
    where: Path,
    json_out: bool,
    policy: Policy,
) -> None:
    if json_out:
        emit_json(
            {
                **dataclasses.asdict(summary),
                "waiting_now": [
                    {
                        "decision_id": p.decision_id,
                        "actions": [a.describe() for a in p.actions],
                        "why": list(p.messages),
                    }
                    for p in waiting
                ],
                "data_dir": str(where),
            }
        )
        return
    span = f" ({summary.first_at} → {summary.last_at})" if summary.first_at else ""
    lines = [
        f"{summary.ticks} tick(s){span}, {summary.decisions} decision(s), "
        f"{summary.executed} action(s) executed; the log and the cluster are in {where}"
    ]
    if summary.ran:
        lines.append("ran (latest last):")
        lines += [f"  {line}" for line in summary.ran]
    for p in waiting:
        lines.append(f"waiting for approval: {p.decision_id}")
        lines += [f"  {a.describe()} — {m}" for a, m in zip(p.actions, p.messages, strict=True)]
        claim = CliChannel().claim_for(p.actions, policy)
        who = f" --as {claim}" if claim else ""
        lines.append(f"  answer with: steward approve {p.decision_id}{who} --data-dir {where}")
    if summary.in_progress:
        lines.append(f"still in progress (goes on next run): {', '.join(summary.in_progress)}")
    if summary.standby_ticks:
        lines.append(f"{summary.standby_ticks} tick(s) stood by: another replica led")
    if summary.fallbacks:
        lines.append(
            f"{summary.fallbacks} fallback(s) to the rules planner in {summary.ticks} tick(s) "
            f"(latest: {summary.fallback_reason})"
        )
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


class Progress:
    """One line on a terminal's stderr while the agent ticks: time, decisions, actions, waiting."""

    def __init__(self, limit: int | None) -> None:
        from agent.daemon.report import RunSummary

        self.limit = limit
        self.summary = RunSummary()
        self._status = err_console.status("starting…")
        self._status.start()

    def update(self, report: TickReport) -> None:
        self.summary.add(report)
        s = self.summary
        of = f"/{self.limit}" if self.limit else ""
        self._status.update(
            f"{report.at or '…'} · tick {s.ticks}{of} · {s.decisions} decision(s) · "
            f"{s.executed} action(s) · {len(s.waiting)} waiting"
        )

    def done(self) -> None:
        self._status.stop()


def _start_slack(
    settings: StewardConfig,
    runtime: Runtime,
    telemetry: Telemetry,
    policy_path: Path,
) -> SlackService:
    from agent.chatops.service import start_for_daemon

    try:
        return start_for_daemon(settings, runtime, telemetry, policy_path=policy_path)
    except InvalidInput as exc:
        fail(str(exc))


def _with_metrics(settings: StewardConfig, metrics: str | None) -> StewardConfig:
    """`--metrics a,b` over steward.yaml's `metrics.sources` ("" or "none": no source)."""
    if metrics is None:
        return settings
    names = tuple(n.strip() for n in metrics.split(",") if n.strip() and n.strip() != "none")
    unknown = [n for n in names if n not in ("prometheus", "nvml")]
    if unknown:
        fail(
            f"--metrics {metrics!r}: {', '.join(unknown)} is not a source; choose prometheus, nvml"
        )
    return with_flags(settings, {"metrics.sources": ("--metrics", names)})


def plan(  # noqa: PLR0917 - typer maps each option to a parameter
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
    planner: PlannerOpt = None,
    policy: PolicyOpt = None,
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    kube_context: ContextOpt = None,
) -> None:
    """Dry-run planning: what the agent would do now, and what the policy says — nothing runs."""
    configure_logging()  # logs to stderr: with --json, stdout holds the JSON document alone
    settings = with_backend(backend)
    where = data_dir(data_dir_opt)
    try:
        opened = open_backend(settings, where)
        # On a cluster, say which labelled workloads were found: a label typo shows at once.
        found = None if opened.simulated else opened.parts.cluster().observe().workloads
        result = dry_run(
            where,
            planner or settings.planner,
            policy or settings.policy,
            opened,
            settings.llm.model_dump(exclude_none=True),
            thresholds=assess_settings(settings),
        )
    except (InvalidInput, PolicyError, PlannerFailed) as exc:
        fail(str(exc))
    if found is not None:
        result["workloads"] = [{"name": w.name, "pool": w.pool} for w in found]
    if json_out:
        emit_json(result)
        return
    console.print(f"[bold]plan[/bold] {result['decision_id']} at {result['observed_at']} (dry run)")
    lines = []
    if found is not None:
        names = ", ".join(f"{w.name} ({w.pool})" for w in found) or "none"
        lines.append(
            f"  {len(found)} workload(s) labelled steward.dev/managed in "
            f"{settings.kubernetes.namespace}: {names}"
        )
    lines += [f"  finding: {finding}" for finding in result["findings"]]
    if result["fallback_reason"]:
        lines.append(
            f"  the {planner} planner failed ({result['fallback_reason']}); "
            f"the {result['planner']} planner decided"
        )
    for q in result.get("deliberated", ()):
        what = "; ".join(q["actions"]) or "no action"
        if q["outcome"] == "planned":
            lines.append(
                f"  deliberated {q['question']} ({q['premise']}): {q['model']} decided in "
                f"{q['latency_s']:g} s — {what}; why: {q['reason']}"
            )
        else:
            lines.append(
                f"  deliberated {q['question']} ({q['premise']}): fallback, the model failed "
                f"({q['reason']}); the rules decide — {what}"
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
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if result["recorded"] is None:
        err_console.print(f"not recorded in the decision log: {result['not_recorded']}")
    else:
        console.print(f"recorded as dry-run plan, log seq {result['recorded']}")


def _notifier(settings: StewardConfig) -> Notifier:
    """steward.yaml's notifiers, as one (the log's by default). Slack's joins them when chat-ops
    starts (agent/chatops/service.py), in front of the others."""
    return notifier_for([name for name in settings.notifiers if name != "slack"])


def _slack_problems(settings: StewardConfig, port: int | None) -> list[str]:
    """Everything that keeps chat-ops from starting as configured, all at once."""
    from agent.daemon.slack_settings import load_secrets

    slack = settings.slack
    problems: list[str] = []
    if "slack" in settings.notifiers and not slack.enabled:
        problems.append(
            "notifiers lists slack but slack.enabled is false: set slack.enabled: true "
            "(STEWARD_SLACK_ENABLED=true) with the channel and tokens (docs/slack.md)"
        )
    if not slack.enabled:
        return problems
    if slack.mode == "http" and not port:
        problems.append(
            "slack http mode answers on the daemon's port: set listen.port or pass --port N"
        )
    try:
        load_secrets(slack)
    except InvalidInput as exc:
        problems += str(exc).splitlines()
    return problems
