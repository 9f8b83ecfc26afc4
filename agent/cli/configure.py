"""`steward config check|show`: is this steward.yaml usable, and what do the settings come to.

`check [FILE]` reads the file (default: `--config` / $STEWARD_CONFIG) with the environment laid
over it, then what it points at — the policy, the scenario, the metric sources' queries — and
prints every problem as `FILE:LINE:COL: message` (exit 2), or one line saying it is fine (exit 0).
`show` prints the effective values, secrets masked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import JsonOpt, console, emit_json, fail
from agent.daemon.compose import metric_sources
from agent.daemon.config import StewardConfig, load_config, masked
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
def show(json_out: JsonOpt = False) -> None:
    """The effective configuration (file + environment), secrets masked."""
    try:
        config = load_config()
    except InvalidInput as exc:
        fail(str(exc))
    shown = masked(config)
    if json_out:
        emit_json({"source": config.source, "config": shown})
        return
    console.print(f"# from {config.source}", markup=False, highlight=False)
    for line in _lines(shown):
        console.print(line, markup=False, highlight=False)


def _referenced_problems(config: StewardConfig) -> list[str]:
    """What the configuration names must be usable too: the policy, the scenario, the sources."""
    problems: list[str] = []
    if config.policy is not None:
        try:
            load_policy(config.policy)
        except InvalidInput as exc:
            problems.append(str(exc))
    if config.scenario is not None:
        from agent.daemon.compose import open_scenario

        try:
            open_scenario(config.scenario)
        except InvalidInput as exc:
            problems.append(str(exc))
    try:
        for source in metric_sources(config):
            problems += [f"{config.source}: {p}" for p in getattr(source, "check", list)()]
    except InvalidInput as exc:
        problems.append(str(exc))
    return problems


def _lines(value: object, indent: str = "") -> list[str]:
    if isinstance(value, dict):
        out: list[str] = []
        for key, sub in value.items():
            if isinstance(sub, dict) and sub:
                out += [f"{indent}{key}:", *_lines(sub, indent + "  ")]
            else:
                out.append(f"{indent}{key}: {_scalar(sub)}")
        return out
    return [f"{indent}{_scalar(value)}"]


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{}"
    return str(value)
