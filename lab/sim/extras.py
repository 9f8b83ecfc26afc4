"""What a scenario adds to or changes in its profile: workloads, node labels, serving figures.

Real situations need more than the built-in profiles: a workload of any name with its labels,
annotations and model (also a CPU-only pod that wants no card), nodes labelled with their zone
and rack, a model served slower or with a shorter context than the profile's. `apply` returns
the profile with these changes; a served model the placement catalogue knows takes its memory
figures from it (profiles.catalogued), as the built-in workloads do.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lab.sim.limits import MAX_REPLICAS
from lab.sim.profiles import GIB, Profile, ServingSpec, WorkloadSpec, catalogued
from tools.model import Mode, Pool, WorkloadKind
from tools.placement.demand import RACK_LABEL, ZONE_LABEL


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Serving(_Spec):
    """How fast one replica serves; every figure left out keeps the profile's."""

    single_stream_tok_s: float | None = Field(default=None, gt=0, le=1e7)
    aggregate_peak_tok_s: float | None = Field(default=None, gt=0, le=1e9)
    prefill_tok_s: float | None = Field(default=None, gt=0, le=1e9)
    max_num_seqs: int | None = Field(default=None, gt=0, le=1 << 16)
    context_length: int | None = Field(default=None, ge=1, le=1 << 24)
    load_s: float | None = Field(default=None, ge=0, le=86_400)


class ExtraWorkload(_Spec):
    """A workload the profile does not have."""

    name: str = Field(min_length=1, max_length=63)
    kind: WorkloadKind = "inference"
    pool: str
    """An existing pool, or a new one selecting `node_selector`'s nodes."""
    replicas: int = Field(default=0, ge=0, le=MAX_REPLICAS)
    model: str | None = None
    cards_per_replica: int = Field(default=1, ge=0, le=64)
    """0: a CPU-only pod."""
    memory_gib: float = Field(default=8.0, gt=0, le=16_384)
    """What one replica reserves (card memory; host memory for a CPU-only pod)."""
    busy_utilization: float = Field(default=0.0, ge=0, le=1)
    node_selector: dict[str, str] = {}
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    serving: Serving | None = None
    """For a served model: its speed; None: a batch or CPU worker without a request queue."""


class NodeChange(_Spec):
    labels: dict[str, str] = {}


def apply(
    profile: Profile,
    workloads: tuple[ExtraWorkload, ...],
    nodes: dict[str, NodeChange],
    serving: dict[str, Serving],
) -> Profile:
    """The profile with extra workloads, relabelled nodes and tuned serving figures."""
    if not (workloads or nodes or serving):
        return profile
    node_specs = tuple(
        n.model_copy(update={"labels": {**n.labels, **nodes[n.name].labels}})
        if n.name in nodes
        else n
        for n in profile.nodes
    )
    specs = [_tuned(w, serving[w.name]) if w.name in serving else w for w in profile.workloads]
    pools = {p.name: p for p in profile.pools}
    for extra in workloads:
        specs.append(_extra(extra))
        pool = pools.get(extra.pool)
        if pool is None:
            pools[extra.pool] = Pool(
                name=extra.pool, workloads=(extra.name,), node_selector=extra.node_selector
            )
        else:
            pools[extra.pool] = pool.model_copy(update={"workloads": (*pool.workloads, extra.name)})
    by_name = {w.name: w for w in specs}
    tuned = set(serving)
    modes = tuple(_mode(m, by_name) if set(m.workloads) & tuned else m for m in profile.modes)
    return profile.model_copy(
        update={
            "nodes": node_specs,
            "workloads": tuple(specs),
            "pools": tuple(pools.values()),
            "modes": modes,
        }
    )


def _tuned(spec: WorkloadSpec, tune: Serving) -> WorkloadSpec:
    update: dict[str, object] = {}
    if spec.serving is not None:
        figures = {
            k: v
            for k, v in tune.model_dump(
                include={
                    "single_stream_tok_s",
                    "aggregate_peak_tok_s",
                    "prefill_tok_s",
                    "max_num_seqs",
                }
            ).items()
            if v is not None
        }
        update["serving"] = spec.serving.model_copy(update=figures)
    if tune.context_length is not None:
        update["context_length"] = tune.context_length
    if tune.load_s is not None:
        update["load_s"] = tune.load_s
    return spec.model_copy(update=update)


def _extra(extra: ExtraWorkload) -> WorkloadSpec:
    memory = int(extra.memory_gib * GIB)
    serving = None
    context = None
    if extra.serving is not None:
        s = extra.serving
        single = s.single_stream_tok_s or 30.0
        serving = ServingSpec(
            single_stream_tok_s=single,
            aggregate_peak_tok_s=max(single, s.aggregate_peak_tok_s or single * 10),
            prefill_tok_s=s.prefill_tok_s or 2_000.0,
            max_num_seqs=s.max_num_seqs or 256,
            kv_bytes_per_token=64 * 1024,
        )
        context = s.context_length or 32_768
    spec = WorkloadSpec(
        name=extra.name,
        kind=extra.kind,
        pool=extra.pool,
        replicas=extra.replicas,
        model=extra.model,
        context_length=context,
        cards_per_replica=extra.cards_per_replica,
        memory_per_node_bytes=memory,
        weights_bytes=int(memory * 0.6) if serving is not None else 0,
        serving=serving,
        busy_utilization=extra.busy_utilization,
        load_s=extra.serving.load_s
        if extra.serving is not None and extra.serving.load_s is not None
        else 30.0,
        node_selector=extra.node_selector,
        labels=extra.labels,
        annotations=extra.annotations,
    )
    return catalogued(spec)


def _mode(mode: Mode, specs: dict[str, WorkloadSpec]) -> Mode:
    """A mode's figures follow its workloads' tuned ones (peaks add up, streams average)."""
    served = [specs[w] for w in mode.workloads if w in specs and specs[w].serving is not None]
    if not served:
        return mode
    peak = sum(w.serving.aggregate_peak_tok_s for w in served if w.serving)
    single = sum(w.serving.single_stream_tok_s for w in served if w.serving) / len(served)
    context = max(w.context_length or 0 for w in served) or mode.max_context
    return mode.model_copy(
        update={
            "aggregate_peak_tok_s": round(peak, 1),
            "single_stream_tok_s": round(single, 1),
            "max_context": context,
        }
    )


def zoned(profile: Profile, zones: int, racks_per_zone: int) -> Profile:
    """A fleet's nodes labelled round-robin with `zones` zones of `racks_per_zone` racks."""
    if zones <= 0:
        return profile
    racks = max(1, racks_per_zone)
    nodes = []
    for i, n in enumerate(profile.nodes):
        zone = i % zones
        rack = (i // zones) % racks
        labels = {**n.labels, ZONE_LABEL: f"zone-{chr(97 + zone)}"}
        if racks_per_zone > 0:
            labels[RACK_LABEL] = f"rack-{chr(97 + zone)}{rack + 1}"
        nodes.append(n.model_copy(update={"labels": labels}))
    return profile.model_copy(update={"nodes": tuple(nodes)})
