"""`steward gpus`: the cards of this host as NVML sees them, and recording that view."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Annotated

import typer
from pydantic import TypeAdapter, ValidationError
from rich.table import Table

from agent.cli.common import EXIT_BAD_INPUT, JsonOpt, console, emit_json, fail
from tools.metrics.nvml import (
    NvmlUnavailable,
    Snapshot,
    gpus_from_snapshot,
    read_host_memory,
    read_snapshot,
    record,
)

_SNAPSHOTS = TypeAdapter(list[Snapshot])


def _gib(value: float | None) -> str:
    return "—" if value is None else f"{value / 2**30:.1f} GiB"


def register(app: typer.Typer) -> None:
    @app.command()
    def gpus(
        json_out: JsonOpt = False,
        record_to: Annotated[
            Path | None, typer.Option("--record", help="Write readings to this JSON file.")
        ] = None,
        seconds: Annotated[float, typer.Option(help="How long to record.", min=0)] = 10.0,
        interval: Annotated[float, typer.Option(help="Seconds between readings.", min=0.05)] = 0.5,
        replay: Annotated[
            Path | None, typer.Option("--replay", help="Show the last reading of a recorded file.")
        ] = None,
    ) -> None:
        """Show this host's cards through NVML (utilization, memory, power, processes)."""
        try:
            if replay is not None:
                snapshot = _load(replay)[-1]
            elif record_to is not None:
                taken = record(seconds, interval)
                record_to.write_text(_SNAPSHOTS.dump_json(taken, indent=1).decode())
                snapshot = taken[-1]
            else:
                snapshot = read_snapshot()
        except NvmlUnavailable as exc:
            fail(f"{exc}. Use --replay FILE to look at a recorded reading.", EXIT_BAD_INPUT)
        host = read_host_memory()
        cards = gpus_from_snapshot(snapshot, socket.gethostname(), host)
        if json_out:
            emit_json({"snapshot": snapshot, "gpus": cards})
            return
        table = Table(title=f"NVML — driver {snapshot.driver}")
        for column in ("#", "model", "util", "memory used / total", "power", "processes"):
            table.add_column(column)
        for card in cards:
            util = card.utilization.value
            power = card.power_w.value
            table.add_row(
                str(card.index),
                card.model,
                "—" if util is None else f"{util:.0f} %",
                f"{_gib(card.memory_used_bytes.value)} / {_gib(card.memory_total_bytes.value)}"
                + ("" if card.memory_total_bytes.source == "nvml" else " (host)"),
                "—" if power is None else f"{power:.0f} W",
                str(len(card.clients)),
            )
        console.print(table)


def _load(path: Path) -> list[Snapshot]:
    try:
        snapshots = _SNAPSHOTS.validate_json(path.read_bytes())
    except (OSError, ValidationError, json.JSONDecodeError) as exc:
        fail(f"{path}: not a recorded NVML reading: {exc}")
    if not snapshots:
        fail(f"{path}: holds no reading")
    return snapshots
