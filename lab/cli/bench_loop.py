"""`steward bench loop`: one tick of the loop at fleet scale, and an idle homelab tick."""

from __future__ import annotations

from typing import Annotated

import typer

from agent.cli.common import BackendOpt, JsonOpt, emit_json, fail
from lab.cli import bench
from lab.cli.bench import ChurnOpt


@bench.app.command("loop")
def bench_loop(  # noqa: PLR0917 - typer maps each option to a parameter
    nodes: Annotated[
        int, typer.Option("--nodes", min=1, max=20_000, help="Fleet size for the tick.")
    ] = 1000,
    runs: Annotated[int, typer.Option("--runs", min=5, help="Timed ticks per figure.")] = 50,
    churn: ChurnOpt = 0.05,
    json_out: JsonOpt = False,
    backend: BackendOpt = None,
    metrics: Annotated[
        str | None,
        typer.Option(
            "--metrics",
            help="prometheus: the readings from a real Prometheus that scrapes the twin's "
            "exporters with Steward's recording rules (with --backend kubernetes).",
        ),
    ] = None,
) -> None:
    """One tick of the loop with the rules planner on a fleet, and an idle homelab tick, each
    on observations parsed afresh from JSON with CHURN of the nodes changed per tick
    (`--backend kubernetes`: the fleet served by the twin, through the official client, with
    CHURN of the kubelets posting their status between ticks; `--metrics prometheus`: and its
    readings through a real Prometheus, every tick's queries timed within it)."""
    if backend not in (None, "sim", "kubernetes"):
        fail(f"--backend {backend!r}: choose sim or kubernetes")
    if metrics not in (None, "prometheus"):
        fail(f"--metrics {metrics!r}: the only metric source benchmarked is prometheus")
    if metrics is not None and backend != "kubernetes":
        fail("--metrics prometheus needs --backend kubernetes (the twin serves the exporters)")
    from lab.bench.fresh import scrape_interval_s
    from lab.bench.prometheus_server import PrometheusMissing

    try:
        scrape_interval_s(churn)  # a fleet scraped less often than Prometheus' lookback reads
    except ValueError as exc:  # as missing: refused before anything starts
        fail(f"--churn: {exc}")
    if backend == "kubernetes":
        from lab.bench.kube_loop import bench_figures as kube_figures

        try:
            figures = kube_figures(nodes, runs, churn, metrics)
        except PrometheusMissing as exc:
            fail(str(exc))
    else:
        from lab.bench.loop import bench_figures

        figures = bench_figures(nodes, runs, churn)
    if json_out:
        emit_json(figures)
        return
    bench.print_figures(figures)
