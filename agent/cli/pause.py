"""`steward pause` and `steward resume`: the durable switch of agent/support/pause.py.

A paused agent keeps observing, deciding and recording; it executes nothing, and answered
approvals wait, until `steward resume`. The switch lives in the data dir, so it holds across
restarts and reaches a running daemon on its next tick.
"""

from __future__ import annotations

import getpass
from datetime import UTC, datetime
from typing import Annotated

import typer

from agent.cli.common import DataDirOpt, JsonOpt, console, data_dir, emit_json
from agent.support import pause as switch

AsOpt = Annotated[str | None, typer.Option("--as", help="Who (default: your user name).")]


def register(app: typer.Typer) -> None:
    """Add pause and resume to the root app."""
    app.command("pause")(pause)
    app.command("resume")(resume)


def pause(
    reason: Annotated[str, typer.Option("--reason", help="Why (shown while paused).")] = "",
    as_name: AsOpt = None,
    json_out: JsonOpt = False,
    data_dir_opt: DataDirOpt = None,
) -> None:
    """Pause the agent: it keeps observing and recording, and executes nothing until resumed."""
    wanted = switch.Pause(by=as_name or getpass.getuser(), at=datetime.now(UTC), reason=reason)
    held, made = switch.pause(data_dir(data_dir_opt), wanted)
    if json_out:
        emit_json({"paused": True, "changed": made, **held.model_dump(mode="json")})
        return
    prefix = "" if made else "already "
    console.print(f"{prefix}{held.line()}; `steward resume` lifts it", markup=False)


def resume(json_out: JsonOpt = False, data_dir_opt: DataDirOpt = None) -> None:
    """Resume the agent: actions run again from its next tick, answered approvals first."""
    lifted = switch.resume(data_dir(data_dir_opt))
    if json_out:
        emit_json({"paused": False, "changed": lifted is not None})
        return
    if lifted is None:
        console.print("the agent was not paused")
    else:
        console.print(f"resumed (it was {lifted.line()})", markup=False)
