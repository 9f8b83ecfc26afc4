"""`steward`: the command line. One typer app; each area's commands live in agent/cli/."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperOption

from agent.cli import (
    answers,
    ask,
    audit,
    configure,
    gpus,
    loop,
    mode,
    pause,
    placement,
    policy,
    status,
)
from agent.cli.common import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, UNWRAPPED, new_command
from agent.cli.plugins import add_plugged_commands
from agent.daemon import logs
from agent.daemon.config import CONFIG_ENV
from agent.provenance import version_line
from tools.errors import InvalidInput, StewardError

PIPED = not sys.stdout.isatty() and "COLUMNS" not in os.environ
"""Help (on stdout) goes to a pipe or a file: printed as plain text, each line as long as it
needs. Rich's panels are as wide as the console, which is 80 columns off a terminal, and would
cut every line there; click's formatter, which typer uses without Rich (`rich_markup_mode=None`),
takes its width from the context settings. COLUMNS set: that width, as on a terminal."""

app = typer.Typer(
    name="steward",
    help="Steward: an autonomous, policy-guarded agent that manages GPU capacity.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    context_settings={
        "help_option_names": ["-h", "--help"],
        **({"terminal_width": UNWRAPPED, "max_content_width": UNWRAPPED} if PIPED else {}),
    },
    # On a terminal, Rich's help: a docstring's lines join into paragraphs, as written.
    rich_markup_mode=None if PIPED else "markdown",
)
app.add_typer(policy.app, name="policy")
app.add_typer(audit.app, name="audit")
app.add_typer(mode.app, name="mode")
app.add_typer(configure.app, name="config")
status.register(app)
ask.register(app)
placement.register(app)
loop.register(app)
answers.register(app)
gpus.register(app)
pause.register(app)
add_plugged_commands(app)  # the lab's: twin, bench, eval


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


def _flags_shown_as_flags() -> None:
    """typer's help prints `<bool>` in the type column of an on/off flag (`--json <bool>`), as if
    it took a value; a flag shows no type there, as in click's and kubectl's help."""
    shown = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_shown_as_flags()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version and the commit it was built from, and exit.",
        ),
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "-v",
            "--verbose",
            help="Log every field of every event on a terminal (default: one short line each).",
        ),
    ] = False,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="steward.yaml to use (also after any command, or $STEWARD_CONFIG).",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Steward: an autonomous, policy-guarded agent that manages GPU capacity."""
    logs.VERBOSE = verbose
    new_command()  # before the command's own options are read


def main() -> None:
    sys.argv[1:] = take_config_option(sys.argv[1:])
    try:
        app()
    except StewardError as exc:
        # A refusal no command caught (a damaged state file, a lost log): one line, no traceback.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT if isinstance(exc, InvalidInput) else EXIT_CHECK_FAILED)


def take_config_option(args: list[str]) -> list[str]:
    """`--config FILE` may stand after any command: take it out and put it in $STEWARD_CONFIG,
    where every command reads its configuration from."""
    kept: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            kept += [arg, *rest]
            break
        if arg == "--config":
            value = next(rest, None)
            if value is None:
                kept.append(arg)  # typer says what is missing
                break
            os.environ[CONFIG_ENV] = value
        elif arg.startswith("--config="):
            os.environ[CONFIG_ENV] = arg.split("=", 1)[1]
        else:
            kept.append(arg)
    return kept


if __name__ == "__main__":
    main()
