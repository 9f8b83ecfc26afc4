"""`steward status`: the cluster now, as the agent observes it.

It observes the configured backend (by default the simulated cluster kept in the data dir,
created on first use as the built-in day, or as a `--scenario` file describes it): nodes, cards
with their sharing, workloads and their queues, the active mode, the links. Rich tables on a
terminal, one JSON document (the ClusterState) with --json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from agent.cli.common import (
    BackendOpt,
    DataDirOpt,
    JsonOpt,
    ResetOpt,
    console,
    data_dir,
    emit_json,
    fail,
    names_a_cluster,
    reset_data_dir,
    with_backend,
)
from agent.daemon.compose import open_backend
from tools.errors import StewardError
from tools.model import ClusterState, Metric

ScenarioOpt = Annotated[
    Path | None,
    typer.Option(
        "--scenario",
        help="A scenario file, or a shipped scenario's name (link-11-percent), for the "
        "simulated cluster; a data dir with a history keeps its own unless --reset.",
        exists=False,
        dir_okay=False,
    ),
]


@names_a_cluster
def status(
    json_out: JsonOpt = False,
    scenario: ScenarioOpt = None,
    data_dir_opt: DataDirOpt = None,
    backend: BackendOpt = None,
    reset: ResetOpt = False,
) -> None:
    """Show the cluster: nodes, cards and their sharing, workloads and queues, mode, links."""
    settings = with_backend(backend)
    where = data_dir(data_dir_opt)
    if reset:
        reset_data_dir(where)
    try:
        opened = open_backend(settings, where, scenario)
        state = opened.parts.cluster().observe()
    except StewardError as exc:
        fail(str(exc))
    if json_out:
        emit_json(state)
        return
    render(state)


def register(app: typer.Typer) -> None:
    """Add this area's commands to the root app."""
    app.command("status")(status)


def _fmt(m: Metric, scale: float = 1.0, unit: str = "", digits: int = 1) -> str:
    if m.value is None:
        return "[dim]missing[/dim]"
    text = f"{m.value / scale:.{digits}f}{unit}"
    return text if m.status == "fresh" else f"[yellow]{text} (stale)[/yellow]"


def render(state: ClusterState) -> None:
    """Print a ClusterState as rich tables."""
    gib = 1024**3
    mode = state.active_mode
    console.print(
        f"[bold]cluster[/bold] observed {state.observed_at:%Y-%m-%d %H:%M:%S %Z} "
        f"({state.source}); active mode: "
        + (f"[green]{mode.name}[/green] since {mode.since:%H:%M:%S}" if mode else "[red]none[/red]")
    )
    nodes = Table(title="nodes and cards", title_justify="left")
    for col in ("node", "card", "sharing", "mem GiB", "util", "clients", "sched gpu"):
        nodes.add_column(col, no_wrap=col in ("node", "mem GiB"))
    for n in state.nodes:
        flags = n.name if n.ready else f"[red]{n.name} NotReady[/red]"
        if n.cordoned:
            flags += " [yellow]cordoned[/yellow]"
        sched = n.scheduler
        sched_text = f"{sched.gpu_allocated}/{sched.gpu_allocatable}" if sched else ""
        if sched and sched.gpu_allocated > sched.gpu_allocatable:
            sched_text = f"[red]{sched_text} over[/red]"
        for i, g in enumerate(n.gpus):
            share = g.sharing.mode + (f" x{g.sharing.replicas}" if g.sharing.replicas > 1 else "")
            used = _fmt(g.memory_used_bytes, gib, digits=0)
            nodes.add_row(
                flags if i == 0 else "",
                f"{g.index}: {g.model}",
                share,
                f"{used}/{_fmt(g.memory_total_bytes, gib, digits=0)}",
                _fmt(g.utilization, 1.0, "%", 0),
                ", ".join(g.clients),
                sched_text if i == 0 else "",
            )
    console.print(nodes)
    wl = Table(title="workloads", title_justify="left")
    for col in ("workload", "pool", "ready", "model", "context", "queue", "wait s", "tok/s"):
        wl.add_column(col, no_wrap=col in ("workload", "pool", "context"))
    for w in state.workloads:
        wl.add_row(
            w.name,
            w.pool,
            f"{w.ready_replicas}/{w.desired_replicas}",
            w.model or "",
            f"{w.context_length:,}" if w.context_length else "",
            _fmt(w.queue_depth, digits=0),
            _fmt(w.queue_wait_s),
            _fmt(w.tokens_per_s),
        )
    console.print(wl)
    modes = Table(title="modes", title_justify="left")
    for col in ("mode", "workloads", "peak tok/s", "1 stream tok/s", "max context"):
        modes.add_column(col, overflow="fold")
    for m in state.modes:
        name = f"[green]{m.name}[/green] (active)" if mode and mode.name == m.name else m.name
        modes.add_row(
            name,
            ", ".join(m.workloads),
            f"{m.aggregate_peak_tok_s:g}",
            f"{m.single_stream_tok_s:g}",
            f"{m.max_context:,}",
        )
    console.print(modes)
    links = Table(title="links", title_justify="left")
    for col in ("link", "path", "Gb/s", "nominal", "GID (want)"):
        links.add_column(col, overflow="fold")
    for lk in state.links:
        for p in lk.paths:
            frac = p.fraction_of_nominal()
            speed = _fmt(p.negotiated_gbps, digits=2)
            if frac is not None and frac < 0.4:
                speed = f"[red]{speed} ({frac:.0%})[/red]"
            gid = _fmt(p.gid_index, digits=0)
            if p.gid_index.value is not None and p.gid_index.value != lk.configured_gid_index:
                gid = f"[red]{gid}[/red]"
            links.add_row(
                f"{lk.name} {lk.nodes[0]}<->{lk.nodes[1]}",
                p.name,
                speed,
                f"{p.nominal_gbps:g}",
                f"{gid} ({lk.configured_gid_index})",
            )
    console.print(links)
