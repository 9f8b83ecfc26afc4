"""structlog set-up for the daemon: JSON lines when stderr is not a terminal, readable when it is.

Logs go to stderr, so that `--json` output on stdout stays one clean document.
"""

from __future__ import annotations

import sys

import structlog


def configure_logging(tty: bool | None = None) -> None:
    """Configure structlog once for this process (`tty` None: ask stderr)."""
    on_tty = sys.stderr.isatty() if tty is None else tty
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=True)
        if on_tty
        else structlog.processors.JSONRenderer(sort_keys=True)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
