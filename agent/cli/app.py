"""`steward`: the command line. One typer app; each area's commands live in agent/cli/."""

from __future__ import annotations

import sys

import typer

import evals.bench.llm_prompt  # noqa: F401 - registers `steward bench llm-prompt`
from agent.cli import audit, bench, gpus, loop, mode, placement, policy, status
from agent.cli.common import EXIT_BAD_INPUT, EXIT_CHECK_FAILED
from tools.errors import InvalidInput, StewardError

app = typer.Typer(
    name="steward",
    help="Steward: an autonomous, policy-guarded agent that manages GPU capacity.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(bench.app, name="bench")
app.add_typer(policy.app, name="policy")
app.add_typer(audit.app, name="audit")
app.add_typer(mode.app, name="mode")
status.register(app)
placement.register(app)
loop.register(app)
gpus.register(app)


def main() -> None:
    try:
        app()
    except StewardError as exc:
        # A refusal no command caught (a damaged state file, a lost log): one line, no traceback.
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT if isinstance(exc, InvalidInput) else EXIT_CHECK_FAILED)


if __name__ == "__main__":
    main()
