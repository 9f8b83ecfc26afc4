"""`steward fit` and `steward place`: what fits where, and why.

- `steward fit --list` prints the model catalogue; `steward fit --model NAME --context-length N
  [--mode split|cluster]` says whether it fits on the node pair's host profile, the memory broken
  down, and the largest context that fits (exit 1 when it does not fit). With `--node NAME` it
  fits on live nodes of the cluster instead, which `--kubeconfig` / `--context` choose as on
  every command (`--context` is the kubeconfig's context; a number there is the old spelling of
  `--context-length`, still read, with a warning — see `fit_context`).
- `steward place WORKLOAD` ranks the nodes of the cluster in --data-dir (the embedded simulated
  cluster by default, or the one a --scenario file describes) for one more replica, with the
  reasons, the rejected nodes and why, and any accounting anomaly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.table import Column, Table

from agent.cli.common import (
    EXIT_CHECK_FAILED,
    ContextOpt,
    DataDirOpt,
    JsonOpt,
    KubeconfigOpt,
    cluster_flags,
    config,
    console,
    data_dir,
    emit_json,
    fail,
    use_context,
    warn,
)
from agent.daemon.compose import open_backend
from tools.errors import InvalidInput
from tools.model import Node
from tools.placement import (
    Catalog,
    FitReport,
    Placement,
    PlacementHints,
    explain_placement,
    fit,
    load_catalog,
)

CatalogOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--catalog",
        metavar="FILE",
        help="Extra model catalogue YAML (repeatable); also $STEWARD_MODELS.",
        dir_okay=False,
    ),
]


def _catalog(paths: list[Path] | None) -> Catalog:
    try:
        return load_catalog(*(paths or []))
    except InvalidInput as exc:
        fail(str(exc))


FitContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        help="The kubeconfig's context for --node, as kubectl's (implies the kubernetes "
        "backend). A number here is the old spelling of --context-length: read as tokens, "
        "with a warning.",
    ),
]
OldKubeContextOpt = Annotated[
    str | None,
    typer.Option("--kube-context", hidden=True, help="Deprecated: --context."),
]


def fit_context(
    context: str | None, context_length: int | None, kube_context: str | None
) -> tuple[int | None, str | None, list[str]]:
    """`fit`'s --context, --context-length and the old --kube-context, resolved: (tokens, the
    kubeconfig's context, warnings), or InvalidInput when they cannot be read one way only.

    --context names the kubeconfig's context on every command; on `fit` it once meant tokens,
    so a number there (no context name reads like one) is still tokens, with a warning, unless
    --context-length gives the tokens too: then it is refused, never read one way in silence.
    """
    warnings: list[str] = []
    kube = None
    tokens = context_length
    if context is not None and context.strip().isdigit():
        if context_length is not None:
            raise InvalidInput(
                f"--context {context} and --context-length {context_length}: --context names "
                "the kubeconfig's context, and a number there reads as the old spelling of "
                "--context-length; give the tokens once, with --context-length (a kubeconfig "
                "context named by a number: kubernetes.context in steward.yaml or "
                "STEWARD_KUBERNETES__CONTEXT)"
            )
        tokens = int(context)
        if tokens < 1:
            raise InvalidInput(f"--context {context}: a context length is 1 token or more")
        warnings.append(
            f"`fit --context {context}` is the old spelling of --context-length {tokens} "
            "(tokens), read as such; --context names the kubeconfig's context, as on every "
            "command that talks to a cluster: write --context-length"
        )
    elif context is not None:
        kube = context
    if kube_context is not None:
        if kube is not None:
            raise InvalidInput(
                f"--context {kube} and --kube-context {kube_context} name two kubeconfig "
                "contexts: give one, with --context"
            )
        kube = kube_context
        warnings.append("--kube-context is deprecated: write --context NAME, as on every command")
    return tokens, kube, warnings


def _print_fit(report: FitReport) -> None:
    need = report.need_per_node
    verdict = "[green]fits[/green]" if report.fits else "[red]does not fit[/red]"
    console.print(
        f"{report.model} at {report.context:,} tokens x {report.concurrency}, mode "
        f"{report.mode} ({report.nodes} node(s), TP={report.tensor_parallel}) on "
        f"{report.host}: {verdict}"
    )
    table = Table("per node", "GiB", box=None)
    rows = [
        ("weights", need.weights_bytes),
        ("KV cache", need.kv_cache_bytes),
        ("linear-attention state", need.linear_state_bytes),
        ("runtime", need.runtime_bytes),
        ("CUDA graphs", need.cuda_graphs_bytes),
        ("activations", need.activations_bytes),
        ("total needed", need.total_bytes),
        ("available", report.budget_per_node.available_bytes),
        ("headroom", report.headroom_bytes),
    ]
    for label, value in rows:
        table.add_row(label, f"{value / 1024**3:.1f}")
    console.print(table)
    console.print(f"budget: {report.budget_per_node.source}")
    console.print(
        f"largest context that fits: {report.largest_context:,} (model maximum "
        f"{report.model_max_context:,}; memory holds {report.max_tokens_in_memory:,} tokens)"
    )
    for line in (*report.reasons, *report.notes):
        console.print(f"- {line}", highlight=False)


def _live_nodes(names: list[str], data: Path | None) -> list[Node]:
    try:
        state = open_backend(config(), data_dir(data)).parts.cluster().observe()
    except InvalidInput as exc:
        fail(str(exc))
    found = [state.node(name) for name in names]
    missing = [name for name, n in zip(names, found, strict=True) if n is None]
    if missing:
        known = ", ".join(sorted(n.name for n in state.nodes))
        raise InvalidInput(f"node(s) {', '.join(missing)} not in the cluster; known: {known}")
    return [n for n in found if n is not None]


def fit_command(
    *,
    list_models: Annotated[bool, typer.Option("--list", help="Print the catalogue.")] = False,
    model: Annotated[str | None, typer.Option("--model", help="A catalogue model.")] = None,
    context_length: Annotated[
        int | None,
        typer.Option("--context-length", min=1, help="The context to fit, in tokens."),
    ] = None,
    mode: Annotated[
        Literal["split", "cluster"],
        typer.Option("--mode", help="split: one node; cluster: TP=2 over two nodes."),
    ] = "split",
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 1,
    host: Annotated[str | None, typer.Option("--host", help="Host profile (gx10).")] = None,
    node: Annotated[
        list[str] | None,
        typer.Option(
            "--node",
            metavar="NODE",
            help="Fit on these live nodes of the cluster in --data-dir (1 for split, 2 for "
            "cluster) instead of the host profile: their memory in use counts.",
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: FitContextOpt = None,
    old_kube_context: OldKubeContextOpt = None,
    catalog_paths: CatalogOpt = None,
    data: DataDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Whether a model fits at a context length, and the largest context that does."""
    try:
        tokens, kube, warnings = fit_context(context, context_length, old_kube_context)
    except InvalidInput as exc:
        fail(str(exc))
    for warning in warnings:
        warn(warning)
    if kube is not None:
        use_context(kube)
    if cluster_flags() and not node:
        given = cluster_flags()
        fail(
            f"{' and '.join(given)} {'name' if len(given) > 1 else 'names'} a cluster, but fit "
            "reads one only for --node NAME (without it, it fits on the host profile): add "
            "--node, or drop it; the context length in tokens is --context-length N"
        )
    catalog = _catalog(catalog_paths)
    if list_models:
        models = [
            {
                **spec.model_dump(mode="json"),
                "weight_bytes": spec.weight_bytes,
                "kv_bytes_per_token": spec.kv_bytes_per_token(),
                "overhead": catalog.overhead(spec).model_dump(mode="json"),
            }
            for spec in catalog.models.values()
        ]
        if json_out:
            emit_json(models)
            return
        table = Table(
            Column("model", no_wrap=True), "params B", "active", "bpw", "GiB", "KV KiB/tok",
            "max context",
        )  # fmt: skip
        for spec in catalog.models.values():
            table.add_row(
                spec.name,
                f"{spec.params_total_b:g}",
                f"{spec.params_active_b:g}" if spec.params_active_b else "-",
                f"{spec.bits_per_weight:g}",
                f"{spec.weight_bytes / 1024**3:.1f}",
                f"{spec.kv_bytes_per_token() / 1024:g}",
                f"{spec.max_context:,}",
            )
        console.print(table)
        return
    if model is None or tokens is None:
        fail("give --list, or --model NAME and --context-length N (tokens)")
    try:
        live = _live_nodes(node, data) if node else None
        report = fit(
            model, tokens, mode, concurrency=concurrency, host=host, nodes=live, catalog=catalog
        )
    except InvalidInput as exc:
        fail(str(exc))
    if json_out:
        emit_json(report)
    else:
        _print_fit(report)
    if not report.fits:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _print_placement(placement: Placement) -> None:
    console.print(f"{placement.workload}: {placement.demand.memory_basis}", highlight=False)
    if not placement.candidates:
        console.print("[red]no node fits one more replica[/red]")
    for cand in placement.candidates:
        console.print(f"[bold]#{cand.rank} {' + '.join(cand.nodes)}[/bold]")
        for reason in cand.reasons:
            console.print(f"    {reason}", highlight=False)
    for rej in placement.rejected:
        console.print(f"[dim]rejected {' + '.join(rej.nodes)}[/dim]")
        for reason in rej.reasons:
            console.print(f"    {reason}", highlight=False)
    for anomaly in placement.anomalies:
        console.print(f"[yellow]anomaly {anomaly.kind}[/yellow] {anomaly.node}: {anomaly.summary}")
        console.print(f"    {anomaly.explanation}", highlight=False)
        console.print(f"    fix: {anomaly.fix}", highlight=False)


def place_command(
    *,
    workload: Annotated[str, typer.Argument(help="The workload to place one more replica of.")],
    strategy: Annotated[
        Literal["spread", "pack"], typer.Option("--strategy", help="spread or pack.")
    ] = "spread",
    prefer_gpu: Annotated[
        list[str] | None,
        typer.Option("--prefer-gpu", metavar="MODEL", help="Preferred card model (repeatable)."),
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1)] = 1,
    tolerate: Annotated[
        list[str] | None,
        typer.Option("--tolerate", metavar="KEY", help="A taint key tolerated (repeatable)."),
    ] = None,
    scenario: Annotated[
        Path | None,
        typer.Option("--scenario", help="Scenario YAML of the simulated cluster.", dir_okay=False),
    ] = None,
    catalog_paths: CatalogOpt = None,
    data: DataDirOpt = None,
    kubeconfig: KubeconfigOpt = None,
    kube_context: ContextOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Rank the nodes for one more replica of WORKLOAD, with reasons and rejections."""
    catalog = _catalog(catalog_paths)
    try:
        state = open_backend(config(), data_dir(data), scenario).parts.cluster().observe()
    except InvalidInput as exc:
        fail(str(exc))
    target = state.workload(workload)
    if target is None:
        known = ", ".join(sorted(w.name for w in state.workloads))
        fail(f"workload {workload!r} is not in the cluster; known: {known}")
    hints = PlacementHints(
        strategy=strategy,
        prefer_gpu_models=tuple(prefer_gpu or ()),
        concurrency=concurrency,
        tolerations=tuple(tolerate or ()),
    )
    try:
        placement = explain_placement(target, state, hints, catalog=catalog)
    except InvalidInput as exc:
        fail(str(exc))
    if json_out:
        emit_json(placement)
    else:
        _print_placement(placement)
    if not placement.candidates:
        raise typer.Exit(EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    """Add this area's commands to the root app."""
    app.command("fit")(fit_command)
    app.command("place")(place_command)
