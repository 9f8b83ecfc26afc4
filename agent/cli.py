"""`steward`: the command line. One typer app; each area's commands live in agent/commands/."""

from __future__ import annotations

import typer

from agent.commands import bench

app = typer.Typer(
    name="steward",
    help="Steward: an autonomous, policy-guarded agent that manages GPU capacity.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(bench.app, name="bench")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
