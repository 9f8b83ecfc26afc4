"""Memory fit: does a model at a context length fit on a node, and what is the longest that does.

Memory needed per node = weights (split evenly under tensor parallelism) + KV cache for the
context x concurrency (GQA heads split among ranks, an MLA latent replicated) + linear-attention
state + serving overhead. What a node offers is its memory less what others use: on a unified
memory host (GB10) the OS and every other process draw on the same 128 GiB, so the budget is the
host's memory less the measured use, or less a documented OS reserve when nothing is measured.

The seeds' lesson: two models ran at 65,536 tokens while one GX10 held 262,144 and 524,288 for
them. `fit` says so: `largest_context` is the model's maximum when memory holds it, else the
largest power of two that memory holds, and `max_tokens_in_memory` the exact bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, computed_field

from tools.bases import Frozen
from tools.errors import InvalidInput
from tools.model import Node
from tools.placement.catalog import GIB, MIB, Catalog, ModelSpec, default_catalog

FitMode = Literal["split", "cluster"]
MODE_NODES: dict[str, int] = {"split": 1, "cluster": 2}
"""Nodes (and tensor-parallel ranks, one per node) of each mode of the GX10 pair."""


def gib(value: float) -> str:
    """Bytes as GiB with one decimal, for messages."""
    return f"{value / GIB:.1f} GiB"


class MemoryBreakdown(Frozen):
    """Bytes one node needs to serve one model replica's share."""

    weights_bytes: int = Field(ge=0)
    kv_cache_bytes: int = Field(ge=0)
    linear_state_bytes: int = Field(ge=0)
    runtime_bytes: int = Field(ge=0)
    cuda_graphs_bytes: int = Field(ge=0)
    activations_bytes: int = Field(ge=0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total_bytes(self) -> int:
        return (
            self.weights_bytes
            + self.kv_cache_bytes
            + self.linear_state_bytes
            + self.runtime_bytes
            + self.cuda_graphs_bytes
            + self.activations_bytes
        )


class NodeBudget(Frozen):
    """Memory one node offers a new model, and where the figures came from."""

    total_bytes: int = Field(ge=0)
    used_by_others_bytes: int = Field(ge=0)
    source: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def available_bytes(self) -> int:
        return max(0, self.total_bytes - self.used_by_others_bytes)


class FitReport(Frozen):
    """Whether a model fits at a context length, the memory broken down, the longest that fits."""

    model: str
    mode: str
    nodes: int = Field(ge=1)
    tensor_parallel: int = Field(ge=1)
    context: int = Field(ge=1)
    concurrency: int = Field(ge=1)
    host: str
    fits: bool
    need_per_node: MemoryBreakdown
    budget_per_node: NodeBudget
    headroom_bytes: int
    """Budget less need, per node; negative when it does not fit."""
    kv_bytes_per_token_per_node: float
    model_max_context: int
    max_tokens_in_memory: int
    """Context tokens memory holds per sequence at this concurrency, regardless of the model's
    maximum (0 if the weights and overhead alone do not fit)."""
    largest_context: int
    """The model's maximum when memory holds it, else the largest power of two memory holds."""
    reasons: tuple[str, ...] = ()
    """Why it does not fit (empty when it does)."""
    notes: tuple[str, ...] = ()


def memory_need(
    spec: ModelSpec,
    catalog: Catalog,
    context: int,
    *,
    tensor_parallel: int = 1,
    concurrency: int = 1,
) -> MemoryBreakdown:
    """The bytes each of `tensor_parallel` nodes needs for `spec` at `context` x `concurrency`."""
    overhead = catalog.overhead(spec)
    kv = spec.kv_bytes_per_token(tensor_parallel) * context * concurrency
    return MemoryBreakdown(
        weights_bytes=-(-spec.weight_bytes // tensor_parallel),
        kv_cache_bytes=round(kv),
        linear_state_bytes=round(spec.linear_state_mib * MIB * concurrency),
        runtime_bytes=round(overhead.runtime_gib * GIB),
        cuda_graphs_bytes=round(overhead.cuda_graphs_gib * GIB),
        activations_bytes=round(overhead.activations_gib * GIB),
    )


def max_tokens(
    spec: ModelSpec,
    catalog: Catalog,
    available_bytes: int,
    *,
    tensor_parallel: int = 1,
    concurrency: int = 1,
) -> int:
    """Context tokens per sequence that `available_bytes` per node holds (memory alone)."""
    fixed = memory_need(spec, catalog, 0, tensor_parallel=tensor_parallel, concurrency=concurrency)
    room = available_bytes - fixed.total_bytes
    if room < 0:
        return 0
    per_token = spec.kv_bytes_per_token(tensor_parallel) * concurrency
    if per_token == 0:
        return spec.max_context
    return int(room // per_token)


def standard_context(tokens: int, model_max: int) -> int:
    """The context one would configure: the model's maximum, else the power of two below."""
    if tokens >= model_max:
        return model_max
    if tokens < 1:
        return 0
    return 1 << (tokens.bit_length() - 1)


def fit_budget(
    spec: ModelSpec,
    catalog: Catalog,
    context: int,
    budget: NodeBudget,
    *,
    mode: str,
    host: str,
    tensor_parallel: int = 1,
    concurrency: int = 1,
    notes: tuple[str, ...] = (),
) -> FitReport:
    """The fit of `spec` against an explicit per-node budget (a live node's, or a profile's)."""
    if context < 1 or concurrency < 1:
        raise InvalidInput(
            f"fit {spec.name}: context ({context}) and concurrency ({concurrency}) must be >= 1"
        )
    need = memory_need(
        spec, catalog, context, tensor_parallel=tensor_parallel, concurrency=concurrency
    )
    available = budget.available_bytes
    tokens = max_tokens(
        spec, catalog, available, tensor_parallel=tensor_parallel, concurrency=concurrency
    )
    reasons: list[str] = []
    if context > spec.max_context:
        reasons.append(
            f"context {context:,} is beyond {spec.name}'s maximum of {spec.max_context:,}"
        )
    fixed = need.total_bytes - need.kv_cache_bytes
    where = "per node" if tensor_parallel > 1 else "on the node"
    if fixed > available:
        reasons.append(
            f"the weights and overhead alone need {gib(fixed)} {where} with "
            f"{tensor_parallel} node(s), {gib(available)} available: no context fits"
        )
    elif need.total_bytes > available:
        reasons.append(
            f"needs {gib(need.total_bytes)} {where} ({gib(need.weights_bytes)} weights + "
            f"{gib(need.kv_cache_bytes)} KV cache + {gib(fixed - need.weights_bytes)} "
            f"overhead), {gib(available)} available: at most {tokens:,} tokens fit"
        )
    return FitReport(
        model=spec.name,
        mode=mode,
        nodes=tensor_parallel,
        tensor_parallel=tensor_parallel,
        context=context,
        concurrency=concurrency,
        host=host,
        fits=not reasons,
        need_per_node=need,
        budget_per_node=budget,
        headroom_bytes=available - need.total_bytes,
        kv_bytes_per_token_per_node=spec.kv_bytes_per_token(tensor_parallel),
        model_max_context=spec.max_context,
        max_tokens_in_memory=tokens,
        largest_context=standard_context(tokens, spec.max_context),
        reasons=tuple(reasons),
        notes=notes,
    )


def node_budget(node: Node, catalog: Catalog) -> tuple[NodeBudget, tuple[str, ...]]:
    """What a live node offers a new model now, and notes on where the figures came from.

    Unified memory (GB10): the host's memory less what the host measures in use (every process,
    the OS included), or less the catalogue's OS reserve when that is not measured; NVML's
    memory figures are not used there (often missing). A discrete node: its card with the most
    free memory (NVML's figures, or the catalogue's card memory when NVML has none).
    """
    notes: list[str] = []
    if node.unified_memory:
        for gpu in node.gpus:
            if not gpu.memory_total_bytes.usable:
                notes.append(
                    f"{node.name}: NVML memory figures {gpu.memory_total_bytes.status} on "
                    f"{gpu.model} (unified memory): using the host's memory instead"
                )
        metric = node.memory_used_bytes
        total = node.memory_total_bytes
        if metric.usable and metric.value is not None:
            used = int(metric.value)
            source = f"{node.name}: {gib(total)} unified memory, {gib(used)} in use (measured)"
        else:
            used = catalog.unified_os_reserve_bytes
            source = (
                f"{node.name}: {gib(total)} unified memory, host memory in use {metric.status}: "
                f"{gib(used)} OS reserve assumed"
            )
            notes.append(source)
        return NodeBudget(total_bytes=total, used_by_others_bytes=used, source=source), tuple(notes)
    best: NodeBudget | None = None
    for gpu in node.gpus:
        total_metric, used_metric = gpu.memory_total_bytes, gpu.memory_used_bytes
        spec = catalog.gpus.get(gpu.model)
        if total_metric.usable and total_metric.value is not None:
            card_total, origin = int(total_metric.value), "NVML"
        elif spec is not None:
            card_total, origin = round(spec.memory_gib * GIB), "catalogue (NVML missing)"
        else:
            notes.append(f"{node.name}: {gpu.uuid} ({gpu.model}) memory unknown: skipped")
            continue
        card_used = int(used_metric.value or 0) if used_metric.usable else 0
        budget = NodeBudget(
            total_bytes=card_total,
            used_by_others_bytes=min(card_used, card_total),
            source=f"{node.name}: {gpu.uuid} ({gpu.model}) {gib(card_total)} from {origin}, "
            f"{gib(card_used)} in use",
        )
        if best is None or budget.available_bytes > best.available_bytes:
            best = budget
    if best is None:
        raise InvalidInput(
            f"node {node.name}: no card with known memory to fit a model on; add the card "
            "model's memory to the catalogue's gpus section"
        )
    return best, tuple(notes)


def fit(
    model: str,
    context: int,
    mode: FitMode = "split",
    *,
    concurrency: int = 1,
    host: str | None = None,
    used_bytes: int | None = None,
    nodes: Sequence[Node] | None = None,
    catalog: Catalog | None = None,
) -> FitReport:
    """Whether `model` at `context` fits on the host profile in a mode of the node pair.

    `split` puts the model on one node; `cluster` spreads it over two with tensor parallelism
    (TP=2: weights and KV heads split between them). `used_bytes` is memory measured in use by
    other processes on each node; without it a unified-memory host keeps its OS reserve.
    With `nodes` (one for split, two for cluster) the live nodes' memory is the budget instead
    of the host profile's: the tightest node binds, since TP splits the model evenly.
    """
    if mode not in MODE_NODES:
        raise InvalidInput(f"fit: mode {mode!r} is not one of split, cluster")
    cat = catalog or default_catalog()
    spec = cat.model(model)
    if nodes is not None:
        return _fit_nodes(
            spec, cat, context=context, mode=mode, nodes=nodes, concurrency=concurrency
        )
    profile = cat.host(host)
    notes: list[str] = []
    if used_bytes is not None:
        others = used_bytes
        source = f"{profile.name}: {gib(profile.memory_bytes)}, {gib(used_bytes)} in use (measured)"
    elif profile.unified_memory:
        others = profile.os_reserve_bytes
        source = (
            f"{profile.name}: {gib(profile.memory_bytes)} unified memory shared with the OS, "
            f"{gib(others)} OS reserve assumed (nothing measured)"
        )
        notes.append(
            "unified memory: GPU memory figures come from the host; other processes' use is "
            "the catalogue's OS reserve because no measurement was given"
        )
    else:
        others = profile.os_reserve_bytes
        source = f"{profile.name}: {gib(profile.memory_bytes)} of card memory"
    budget = NodeBudget(
        total_bytes=profile.memory_bytes, used_by_others_bytes=others, source=source
    )
    span = MODE_NODES[mode]
    if spec.attention == "mla" and span > 1:
        notes.append("MLA: the KV latent is replicated on every tensor-parallel rank")
    return fit_budget(
        spec,
        cat,
        context,
        budget,
        mode=mode,
        host=profile.name,
        tensor_parallel=span,
        concurrency=concurrency,
        notes=tuple(notes),
    )


def _fit_nodes(
    spec: ModelSpec,
    catalog: Catalog,
    *,
    context: int,
    mode: FitMode,
    nodes: Sequence[Node],
    concurrency: int,
) -> FitReport:
    if len(nodes) != MODE_NODES[mode]:
        raise InvalidInput(
            f"fit {spec.name} in mode {mode}: needs {MODE_NODES[mode]} node(s), "
            f"got {len(nodes)} ({', '.join(n.name for n in nodes)})"
        )
    budgets = [node_budget(node, catalog) for node in nodes]
    tightest = min(budgets, key=lambda pair: pair[0].available_bytes)[0]
    notes = tuple(note for _, node_notes in budgets for note in node_notes)
    if spec.attention == "mla" and len(nodes) > 1:
        notes += ("MLA: the KV latent is replicated on every tensor-parallel rank",)
    return fit_budget(
        spec,
        catalog,
        context,
        tightest,
        mode=mode,
        host=" + ".join(node.name for node in nodes),
        tensor_parallel=len(nodes),
        concurrency=concurrency,
        notes=notes,
    )
