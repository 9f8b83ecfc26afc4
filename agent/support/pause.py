"""The durable pause: while DATA_DIR/pause.json says so, the agent observes, decides and records,
but executes nothing.

A pause is a file rather than a flag in memory so that it outlives the process (a restart, a
kill -9, an upgrade) and so that `steward pause` in another process, or a Slack command in the
daemon's own, reach the same switch. The runtime reads it once per tick: answered approvals wait
(they run after `resume`), and act skips every action of a new decision, saying why in the log.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.support.datadir import read_model_file, replace_file
from agent.support.dbfile import DamagedFile

PAUSE_NAME = "pause.json"


class Pause(BaseModel):
    """Who paused the agent, when, why and from where."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    by: str
    at: datetime
    reason: str = ""
    channel: Literal["cli", "slack"] = "cli"

    def line(self) -> str:
        why = f": {self.reason}" if self.reason else ""
        return f"paused by {self.by} at {self.at:%Y-%m-%d %H:%M:%S %Z}{why}"


def read(data_dir: Path) -> Pause | None:
    """The pause in force, or None when the agent runs."""
    return read_model_file(data_dir / PAUSE_NAME, Pause, "the pause", _FIX)


_FIX = (
    "while it is unreadable nobody can tell whether the agent is paused, so it does not run. "
    "Look at it, then `steward resume` (remove the file) or `steward pause` again"
)


def pause(data_dir: Path, wanted: Pause) -> tuple[Pause, bool]:
    """Pause the agent; returns the pause in force and whether this call made it (an agent
    already paused stays paused as it was: the first pause's who and why are kept)."""
    held = read(data_dir)
    if held is not None:
        return held, False
    # Durable before the answer: a pause that a power cut forgets is no pause.
    replace_file(data_dir / PAUSE_NAME, wanted.model_dump_json().encode())
    return wanted, True


def resume(data_dir: Path) -> Pause | None:
    """Lift the pause; returns the one lifted, or None when the agent was not paused."""
    path = data_dir / PAUSE_NAME
    try:
        held = read(data_dir)
    except DamagedFile:
        if not path.is_file():
            raise
        path.unlink()  # a damaged pause is lifted like any other: the operator asked
        return None
    if held is not None:
        path.unlink(missing_ok=True)
    return held
