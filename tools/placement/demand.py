"""What one replica of a workload asks of a node: card slots, sharing it accepts, memory.

The placement hints (strategy, preferred card models, accepted sharing, concurrency, tolerated
taints) are part of the demand's input; they live here with it.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import Field

from tools.bases import Frozen
from tools.errors import InvalidInput
from tools.model import ClusterState, SharingMode, Workload
from tools.placement.catalog import Catalog
from tools.placement.memoryfit import gib, memory_need

Strategy = Literal["spread", "pack"]

DEFAULT_SHARING: dict[str, tuple[SharingMode, ...]] = {
    "inference": ("exclusive", "mig"),
    "render": ("exclusive",),
    "tts": ("exclusive", "mps", "time-slicing", "mig"),
    "batch": ("exclusive", "mps", "time-slicing", "mig"),
}
"""Card sharing each kind accepts by default: an LLM server wants its card's memory to itself;
a TTS service or a batch worker is happy as an MPS or time-sliced client."""


ZONE_LABEL = "topology.kubernetes.io/zone"
RACK_LABEL = "topology.kubernetes.io/rack"
"""Failure-domain labels: the well-known zone label, and a rack label in its namespace."""


class PlacementHints(Frozen):
    """How to choose among the nodes that fit."""

    strategy: Strategy = "spread"
    """spread: fewest replicas of the workload first; pack: the fullest node that still fits."""
    prefer_gpu_models: tuple[str, ...] = ()
    """Card models in order of preference (a ranking, not a filter)."""
    sharing: tuple[SharingMode, ...] | None = None
    """Card sharing modes the workload accepts; by default from its kind (DEFAULT_SHARING)."""
    concurrency: int = Field(default=1, ge=1)
    """Sequences served at the workload's context length, for the KV cache."""
    memory_bytes: int | None = Field(default=None, ge=0)
    """Memory per card a replica needs, instead of the catalogue's figure."""
    tolerations: tuple[str, ...] = ()
    """Taint keys the workload tolerates (NoSchedule/NoExecute taints with other keys exclude)."""
    exclude_nodes: tuple[str, ...] = ()
    failure_domains: tuple[str, ...] = (ZONE_LABEL, RACK_LABEL)
    """Node labels naming failure domains, widest first: spread puts a replica in the domain
    holding fewest of the workload's replicas before looking at single nodes."""
    min_link_fraction: float = Field(default=0.25, ge=0, le=1)
    """A tensor-parallel pair needs every measured link path at this fraction of nominal.

    A healthy GX10 path negotiates ~49 % (98 of 200 Gb/s, RDMA measured); the seeds' faults sit
    at 11 % (a pending reboot) and 7 % (13-15 Gb/s after a hot-plug)."""

    @cached_property
    def preference_ranks(self) -> dict[str, int]:
        """Card model -> its place in `prefer_gpu_models` (first mention wins)."""
        ranks: dict[str, int] = {}
        for i, model in enumerate(self.prefer_gpu_models):
            ranks.setdefault(model, i)
        return ranks


class Demand(Frozen):
    """One replica's needs, resolved against the catalogue and the pool."""

    workload: str
    nodes_per_replica: int = Field(ge=1)
    cards_per_node: int = Field(ge=0)
    sharing: tuple[SharingMode, ...]
    card_bytes: int | None = None
    """Memory on each card the replica uses (its tensor-parallel share)."""
    host_bytes: int | None = None
    """Memory the replica takes from a unified-memory node's host memory."""
    memory_basis: str
    node_selector: dict[str, str] = Field(default_factory=dict)

    @cached_property
    def accepts_shared(self) -> bool:
        return any(mode in ("mps", "time-slicing") for mode in self.sharing)


def demand_of(
    workload: Workload, state: ClusterState, hints: PlacementHints, catalog: Catalog
) -> Demand:
    """The demand of one replica of `workload`; InvalidInput if its shape cannot be placed."""
    cards, span = workload.cards_per_replica, workload.nodes_per_replica
    if cards % span:
        raise InvalidInput(
            f"workload {workload.name}: cards_per_replica ({cards}) is not a multiple of "
            f"nodes_per_replica ({span}); a tensor-parallel replica takes the same cards per node"
        )
    per_node = cards // span
    card_bytes: int | None = None
    if hints.memory_bytes is not None:
        card_bytes = hints.memory_bytes
        basis = f"{gib(card_bytes)} per card (hint)"
    elif workload.model is not None and workload.model in catalog.models:
        spec = catalog.models[workload.model]
        context = workload.context_length or spec.max_context
        need = memory_need(
            spec, catalog, context, tensor_parallel=max(1, cards), concurrency=hints.concurrency
        )
        card_bytes = need.total_bytes
        basis = (
            f"{spec.name} at {context:,} tokens x {hints.concurrency}: {gib(card_bytes)} per "
            f"card ({gib(need.weights_bytes)} weights + {gib(need.kv_cache_bytes)} KV cache + "
            f"{gib(card_bytes - need.weights_bytes - need.kv_cache_bytes)} overhead)"
        )
    elif workload.model is not None:
        basis = f"model {workload.model} is not in the catalogue: memory not checked"
    else:
        basis = "no model named: memory not checked"
    pool = state.pool(workload.pool)
    return Demand(
        workload=workload.name,
        nodes_per_replica=span,
        cards_per_node=per_node,
        sharing=hints.sharing or DEFAULT_SHARING[workload.kind],
        card_bytes=card_bytes,
        host_bytes=None if card_bytes is None else card_bytes * max(1, per_node),
        memory_basis=basis,
        node_selector=pool.node_selector if pool else {},
    )
