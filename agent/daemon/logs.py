"""structlog set-up for the daemon: JSON lines when stderr is not a terminal, short ones when it is.

Logs go to stderr, so that `--json` output on stdout stays one clean document. On a terminal each
event is one line no wider than the terminal: one clock, labelled and in UTC — the cluster's
(`cluster 07:12:15Z`, simulated on the simulator) when the event is about a moment of the
cluster, else the host's (`host 18:15:51Z`) — the level, the event and its text (or its fields,
cut to fit). `-v` (`steward -v run …`) prints every field instead; JSON lines always carry them
all, each clock under its own key (`timestamp`: the host's, `at`: the cluster's).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any

import structlog

VERBOSE = False
"""Set by `steward -v`: a terminal gets every field of every event."""
HIDDEN = frozenset({"timestamp", "level", "event", "at", "text"})


def configure_logging(tty: bool | None = None, verbose: bool | None = None) -> None:
    """Configure structlog once for this process (`tty` None: ask stderr; `verbose` None: -v)."""
    on_tty = sys.stderr.isatty() if tty is None else tty
    detailed = VERBOSE if verbose is None else verbose
    renderer: structlog.typing.Processor
    if not on_tty:
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    elif detailed:
        renderer = structlog.dev.ConsoleRenderer(colors=True)
    else:
        renderer = short_line
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


def short_line(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> str:
    """One event as one terminal line: `cluster 07:12:15Z info  finding appeared: text`."""
    clock = _clock("cluster", event.get("at")) or _clock("host", event.get("timestamp")) or ""
    level = str(event.get("level", "info"))
    head = f"{clock} {level:<7} {event.get('event', '')}"
    detail = event.get("text")
    if not detail:
        detail = " ".join(
            f"{k}={_short(v)}"
            for k, v in event.items()
            if k not in HIDDEN and v not in (None, [], {})
        )
    line = f"{head}: {detail}" if detail else head
    width = shutil.get_terminal_size((120, 24)).columns
    return line if len(line) <= width else line[: max(width - 1, 20)] + "…"


def _clock(label: str, value: object) -> str | None:
    """`label HH:MM:SSZ` of an ISO time, in UTC; None when there is none."""
    if not isinstance(value, str) or not value:
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is not None:
        at = at.astimezone(UTC)
    return f"{label} {at:%H:%M:%S}Z"


def _short(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)
