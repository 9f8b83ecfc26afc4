"""Commands that other packages plug into `steward`, found by entry point.

The lab's commands (`twin`, `bench`, `eval`) are declared in pyproject.toml under the entry
point group `steward.commands`: each names a `register(app)` that adds its command to the root
app. The product never imports the lab; it loads whatever the group holds. A command whose
module cannot load (a dependency missing) still answers, in one line, with how to install the
lab, and exits 2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Annotated

import typer

from agent.cli.common import EXIT_BAD_INPUT

COMMANDS = "steward.commands"
LAB_INSTALL = "pip install 'gpu-steward[lab]'"


def add_plugged_commands(app: typer.Typer, points: Iterable[EntryPoint] | None = None) -> None:
    """Register on `app` every command of `points` (default: the `steward.commands` entry
    points installed)."""
    found = entry_points(group=COMMANDS) if points is None else points
    for point in sorted(found, key=lambda p: p.name):
        try:
            register = point.load()
        except ImportError as exc:
            app.command(
                point.name,
                context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
                add_help_option=False,
            )(_cannot_load(point.name, str(exc)))
            continue
        register(app)


def _cannot_load(name: str, why: str) -> Callable[..., None]:
    def refuse(args: Annotated[list[str] | None, typer.Argument(hidden=True)] = None) -> None:
        typer.echo(f"error: steward {name} cannot load ({why}): {LAB_INSTALL}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)

    refuse.__doc__ = f"(not installed: {LAB_INSTALL})"
    return refuse
