"""`steward`: the command line. One typer app; each area's commands live in agent/cli/."""

from __future__ import annotations

import typer

import evals.bench.llm_prompt  # noqa: F401 - registers `steward bench llm-prompt`
from agent.cli import audit, bench, eval, gpus, loop, mode, placement, policy, status

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
eval.register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
