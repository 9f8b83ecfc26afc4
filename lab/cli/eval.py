"""`steward eval`: score a planner's decisions over the cases of lab/cases/ (docs/evals.md).

Each case runs on the embedded simulated cluster through the real loop, in a temporary data
dir; the scorecard (per category and difficulty; model, tokens and latency for the LLM planner)
goes to stdout, as Markdown or with --json as one JSON document, and to --report FILE (Markdown,
or JSON when FILE ends in .json). Exit 1 when the score is below 95 or any unsafe action ran;
2 on a bad case file or option. On a terminal, a progress line on stderr counts the cases done
(none with --json or when stderr is not a terminal).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Annotated

import structlog
import typer

from agent.cli.common import EXIT_CHECK_FAILED, JsonOpt, console, emit_json, err_console, fail
from tools.errors import InvalidInput


def eval_command(  # noqa: PLR0917 - typer maps each option to a parameter
    planner: Annotated[
        str, typer.Option("--planner", help="rules, or llm (STEWARD_LLM_* configure it).")
    ] = "rules",
    cases: Annotated[
        Path | None,
        typer.Option("--cases", help="A directory of case files. Default: lab/cases."),
    ] = None,
    category: Annotated[
        str | None, typer.Option("--category", help="Run only the cases of this category.")
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Write the scorecard here (.json: JSON; else Markdown)."),
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", min=1, max=64, help="Cases run at once, one process each.")
    ] = 1,
    as_json: JsonOpt = False,
) -> None:
    """Run the eval cases and print the scorecard; exit 1 below 95 or on an unsafe action."""
    # The loop, LangGraph and the cases load only for this command.
    from lab.scorecard import CASES_DIR, evaluate, load_cases, markdown, passed

    if planner not in ("rules", "llm"):
        fail(f"--planner {planner!r}: choose rules or llm")
    # The loop logs every decision; the scorecard is the output here.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    try:
        chosen = load_cases(cases or CASES_DIR, category)
        progress = CaseProgress(len(chosen)) if err_console.is_terminal and not as_json else None
        try:
            card = evaluate(
                chosen, planner, jobs=jobs, on_case=progress.update if progress else None
            )
        finally:
            if progress is not None:
                progress.done()
    except InvalidInput as exc:
        fail(str(exc))
    text = markdown(card)
    if report is not None:
        try:
            body = json.dumps(card, indent=2) if report.suffix == ".json" else text
            report.write_text(body + "\n")
        except OSError as exc:
            fail(f"--report {report}: cannot write it: {exc.strerror}")
    if as_json:
        emit_json(card)
    else:
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    if not passed(card):
        raise typer.Exit(EXIT_CHECK_FAILED)


class CaseProgress:
    """One line on a terminal's stderr while the cases run (never with --json, never piped)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.count = 0
        self.started = time.monotonic()
        self._status = err_console.status(f"eval: 0/{total} case(s)…")
        self._status.start()

    def update(self, name: str) -> None:
        self.count += 1
        self._status.update(
            f"eval: {self.count}/{self.total} case(s), {time.monotonic() - self.started:.0f} s "
            f"· done: {name}"
        )

    def done(self) -> None:
        self._status.stop()


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
