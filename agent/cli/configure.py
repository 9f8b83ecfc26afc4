"""`steward config check|show`: is this steward.yaml usable, and what do the settings come to.

`check [FILE]` reads the file (default: `--config` / $STEWARD_CONFIG) with the environment laid
over it, then what it points at — the policy, the scenario, the metric sources' queries — and
prints every problem as `FILE:LINE:COL: message` (exit 2), or one line saying it is fine (exit 0).
`show` prints the effective values, secrets masked, each with where it came from: its default,
the file, a STEWARD_* variable (named) or a flag (`--backend`, `--planner`, `--data-dir`,
`--kubeconfig`, `--context`, as `steward run` takes them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import (
    BackendOpt,
    ContextOpt,
    JsonOpt,
    KubeconfigOpt,
    console,
    emit_json,
    fail,
    warn_unknown,
    with_backend,
    with_flags,
)
from agent.daemon.compose import metric_sources
from agent.daemon.config import StewardConfig, load_config, masked
from agent.daemon.envvars import leaves
from policies.loader import load_policy
from tools.errors import InvalidInput

app = typer.Typer(help="Check steward.yaml, or show the effective configuration.")


@app.command("check")
def check(
    file: Annotated[
        Path | None,
        typer.Argument(help="steward.yaml (default: --config or $STEWARD_CONFIG).", dir_okay=False),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Validate a configuration and what it names; exit 2 with FILE:LINE:COL for each problem."""
    try:
        config = load_config(file)
    except InvalidInput as exc:
        fail(str(exc))
    warn_unknown(config)
    problems = _referenced_problems(config)
    if problems:
        fail("\n".join(problems))
    if json_out:
        emit_json({"ok": True, "source": config.source, "config": masked(config)})
        return
    sources = ", ".join(config.metrics.sources) or "none"
    console.print(
        f"ok: {config.source}: backend {config.backend}, planner {config.planner}, "
        f"metric sources {sources}, data dir {config.data_dir}",
        markup=False,
        highlight=False,
    )


@app.command("show")
def show(  # noqa: PLR0917 - typer maps each option to a parameter
    json_out: JsonOpt = False,
    backend: BackendOpt = None,
    planner: Annotated[
        str | None, typer.Option("--planner", help="rules or llm, as `steward run --planner`.")
    ] = None,
    data_dir_opt: Annotated[
        Path | None,
        typer.Option("--data-dir", help="As `steward run --data-dir`.", file_okay=False),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    kube_context: ContextOpt = None,
) -> None:
    """The effective configuration (file + environment + the flags given), secrets masked, and
    where each value came from: default, file, environment (which variable) or flag."""
    config = with_flags(
        with_backend(backend),
        {"planner": ("--planner", planner), "data_dir": ("--data-dir", data_dir_opt)},
    )
    shown = masked(config)
    sources = {}
    for path in leaves(StewardConfig):
        key = ".".join(path)
        kind, where = config.origin(key)
        sources[key] = {"source": kind, **({"from": where} if where else {})}
    if json_out:
        emit_json({"source": config.source, "config": shown, "sources": sources})
        return
    console.print(f"# from {config.source}", markup=False, highlight=False)
    for line in _lines(shown, sources):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _referenced_problems(config: StewardConfig) -> list[str]:
    """What the configuration names must be usable too: the policy, the scenario, the sources."""
    problems: list[str] = []
    if config.policy is not None:
        try:
            load_policy(config.policy)
        except InvalidInput as exc:
            problems.append(str(exc))
    if config.scenario is not None:
        from agent.daemon.compose import check_scenario

        try:
            check_scenario(config.scenario)
        except InvalidInput as exc:
            problems.append(str(exc))
    try:
        for source in metric_sources(config):
            problems += [f"{config.source}: {p}" for p in getattr(source, "check", list)()]
    except InvalidInput as exc:
        problems.append(str(exc))
    return problems


def _lines(
    value: object, sources: dict[str, dict[str, str]], indent: str = "", prefix: str = ""
) -> list[str]:
    """YAML-like lines, each value followed by where it came from (`# environment NAME`)."""
    if not isinstance(value, dict):
        return [f"{indent}{_scalar(value)}"]
    out: list[str] = []
    for key, sub in value.items():
        dotted = f"{prefix}{key}"
        if isinstance(sub, dict) and sub and dotted not in sources:
            out += [f"{indent}{key}:", *_lines(sub, sources, indent + "  ", dotted + ".")]
            continue
        origin = sources.get(dotted, {"source": "default"})
        where = f" {origin['from']}" if "from" in origin else ""
        text = f"{indent}{key}: {_scalar(sub)}"
        out.append(f"{text}  # {origin['source']}{where}")
    return out


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return json.dumps(value) if value else "{}"
    return str(value)
