"""`steward gpus`: the cards of this host as NVML sees them, recording that view, and serving it.

`--serve PORT` is an exporter: GET /metrics answers NVML's readings under the DCGM exporter's
names (tools.metrics.exposition), read afresh at each scrape, so a Prometheus can scrape a host
that runs no DCGM — a GB10 among them, whose memory NVML cannot give: it is the host's, and the
series say so (`memory_source="host-meminfo"`). With `--replay FILE` it serves a recorded
reading, one snapshot after the other at the pace they were recorded.
"""

from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from pydantic import TypeAdapter, ValidationError
from rich.table import Table

from agent.cli.common import EXIT_BAD_INPUT, JsonOpt, console, emit_json, err_console, fail
from tools.metrics.exposition import card_lines, render
from tools.metrics.nvml.readings import (
    NvmlUnavailable,
    Snapshot,
    gpus_from_snapshot,
    read_host_memory,
    read_snapshot,
    record,
)
from tools.metrics.nvml.source import host_state
from tools.metrics.serve import MetricsServer

_SNAPSHOTS = TypeAdapter(list[Snapshot])


def _gib(value: float | None) -> str:
    return "—" if value is None else f"{value / 2**30:.1f} GiB"


def register(app: typer.Typer) -> None:
    @app.command()
    def gpus(  # noqa: PLR0917 - typer maps each option to a parameter
        json_out: JsonOpt = False,
        record_to: Annotated[
            Path | None, typer.Option("--record", help="Write readings to this JSON file.")
        ] = None,
        seconds: Annotated[float, typer.Option(help="How long to record.", min=0)] = 10.0,
        interval: Annotated[float, typer.Option(help="Seconds between readings.", min=0.05)] = 0.5,
        replay: Annotated[
            Path | None,
            typer.Option("--replay", help="Show (or serve) the readings of a recorded file."),
        ] = None,
        serve: Annotated[
            int | None,
            typer.Option(
                "--serve",
                help="Serve the readings on this port under DCGM's metric names (/metrics).",
                min=0,
                max=65535,
            ),
        ] = None,
        bind: Annotated[str, typer.Option("--bind", help="Address --serve binds.")] = "127.0.0.1",
    ) -> None:
        """Show this host's cards through NVML (utilization, memory, power, processes)."""
        if serve is not None:
            _serve(serve, bind, None if replay is None else _load(replay))
            return
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
        cards = gpus_from_snapshot(snapshot, socket.gethostname(), read_host_memory())
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


def _serve(port: int, host: str, recorded: list[Snapshot] | None) -> None:
    """Serve until interrupted; each scrape reads NVML (or the next recorded snapshot)."""
    name = socket.gethostname()
    if recorded is None:
        try:
            read_snapshot()
        except NvmlUnavailable as exc:
            fail(f"{exc}. Use --replay FILE to serve a recorded reading.", EXIT_BAD_INPUT)
    started = time.monotonic()

    def body() -> bytes:
        if recorded is None:
            snapshot = read_snapshot()
        else:
            snapshot = _at(recorded, time.monotonic() - started)
        now = snapshot.model_copy(update={"taken_at": datetime.now(UTC)})
        return render(card_lines(host_state(now, name, read_host_memory())))

    try:
        server = MetricsServer(body, port=port, host=host)
    except OSError as exc:
        fail(f"--serve {port}: cannot listen on {host}:{port}: {exc.strerror}; pick a free port")
    err_console.print(
        f"serving NVML readings on http://{host}:{server.port}/metrics", highlight=False
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def _at(recorded: list[Snapshot], elapsed_s: float) -> Snapshot:
    """The recorded snapshot `elapsed_s` into the recording, looping at its end."""
    first = recorded[0].taken_at
    span = (recorded[-1].taken_at - first).total_seconds()
    offset = elapsed_s % span if span > 0 else 0.0
    for snapshot in recorded:
        if (snapshot.taken_at - first).total_seconds() >= offset:
            return snapshot
    return recorded[-1]
