"""Cluster profiles for the simulator: what hardware exists and what runs on it.

A `Profile` is static: nodes and their cards, the workloads with their serving figures, pools,
modes and links. The simulator's moving parts (replicas, queues, faults) live elsewhere; a
profile only says what the world is made of. `homelab()` is docs/architecture.md's cluster
(calibrated from the seeds); `fleet()` generates N nodes x M cards for scale tests.

Where the figures come from:
- Decode speeds, aggregate peaks and contexts of the GX10 modes: the seeds (EXP-0059):
  cluster 95.5 tok/s aggregate, 40.9 single stream, 1,048,576 context; split ~170 aggregate,
  20.3 and 20.8 single stream, 131,072 + 262,144 context.
- Prefill rates: estimates. LMSYS's DGX Spark (GB10) review (Oct 2025) measured SGLang prefill of
  ~1,700-2,000 tok/s for gpt-oss-120b (5.1B active parameters) and ~8,000 tok/s for Llama 3.1 8B;
  prefill is compute-bound, so we scale by active parameters: ~1,200 tok/s for a ~13B-active
  MoE, ~1,500 for 10B active; TP=2 over the 2x200G link adds the second GB10's compute but pays
  all-reduce per layer, so ~1,800 for the pair. The RTX PRO 6000 Blackwell (~4x GB10's dense
  compute) prefills a dense 32B at ~4,000 tok/s.
- Memory: one source of truth, the placement catalogue (tools/placement/models.yaml, extended by
  $STEWARD_MODELS). For a served model the catalogue knows, the weights, the KV bytes per token
  and the fixed per-node overhead (runtime, CUDA graphs, activations, linear-attention state)
  come from it (`catalogued`), so that `steward fit`, `steward place`, the simulator's memory
  refusals and the rotation preflight agree. A replica reserves what vLLM's
  `gpu_memory_utilization` would (0.85-0.92 of the memory, `memory_per_node_bytes` below), and a
  profile whose reservation cannot hold its model at its configured context, by the catalogue's
  arithmetic, is refused when built. Models the catalogue lacks (the TTS voice, the fleet's
  stand-ins) keep the figures written here.
- Model load (start-up delay): safetensors from NVMe at ~1 GB/s effective plus CUDA-graph
  capture: ~3 min for an 80 GiB model on one GX10, ~4 min for TP=2 (NCCL bootstrap on top),
  ~90 s for a 64 GiB model on the workstation card, seconds for TTS and render workers.
- Card power: idle ~11 % of the limit (PARTS.md, NVML on an H200).
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict, Field

from tools.model import Mode, Pool, Sharing, WorkloadKind
from tools.placement.catalog import Catalog, default_catalog
from tools.placement.memoryfit import memory_need

GIB = 1024**3
HOSTNAME = "kubernetes.io/hostname"


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CardSpec(_Spec):
    model: str
    memory_bytes: int = Field(gt=0)
    power_limit_w: float = Field(gt=0)
    sharing: Sharing = Sharing()


class NodeSpec(_Spec):
    name: str
    labels: dict[str, str] = {}
    memory_bytes: int = Field(gt=0)
    unified_memory: bool = False
    os_memory_bytes: int = Field(default=6 * GIB, ge=0)
    """Memory the OS and daemons hold whatever runs (reported in the node's memory used)."""
    cards: tuple[CardSpec, ...] = ()


class ServingSpec(_Spec):
    """How fast one replica serves requests, and what its KV cache can hold."""

    single_stream_tok_s: float = Field(gt=0)
    aggregate_peak_tok_s: float = Field(gt=0)
    prefill_tok_s: float = Field(gt=0)
    kv_bytes_per_token: int = Field(default=0, ge=0)
    """Over all the replica's nodes; 0: from the catalogue (`catalogued`)."""
    max_num_seqs: int = Field(default=256, gt=0)
    """Requests one replica runs at once; also the batch at which it reaches its aggregate peak
    (lab.sim.serving.decode_step_s)."""
    max_num_batched_tokens: int = Field(default=8192, gt=0)
    """Tokens one engine step schedules: the running decodes first, prefill chunks in the rest."""


class WorkloadSpec(_Spec):
    name: str
    kind: WorkloadKind
    pool: str
    replicas: int = Field(default=0, ge=0)
    """Replicas running (ready) when the simulation starts."""
    cards_per_replica: int = Field(default=1, ge=0)
    nodes_per_replica: int = Field(default=1, ge=1)
    memory_per_node_bytes: int = Field(ge=0)
    """What one replica reserves on each of its nodes (weights + KV cache + runtime)."""
    weights_bytes: int = Field(default=0, ge=0)
    """Model weights over all the replica's nodes."""
    overhead_per_node_bytes: int = Field(default=0, ge=0)
    """Runtime, CUDA graphs, activations and recurrent state on each node; the rest of the
    reservation is KV cache."""
    model: str | None = None
    context_length: int | None = None
    serving: ServingSpec | None = None
    busy_utilization: float = Field(default=0.0, ge=0, le=1)
    """Card utilization while running: a batch worker's steady load, a render replica's while it
    runs a job (lab.sim.jobs)."""
    load_s: float = Field(default=30.0, ge=0)
    """Start-up delay: from placement to ready (model load, graph capture)."""
    exit_s: float = Field(default=5.0, ge=0)
    """From the last in-flight request (or the drain deadline) to the memory being free."""
    node_selector: dict[str, str] = {}
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}

    @property
    def runs_jobs(self) -> bool:
        """Render workloads work through a job queue (lab.sim.jobs), not token requests."""
        return self.kind == "render"

    @property
    def kv_capacity_tokens(self) -> int:
        """KV-cache tokens one replica holds, over all its nodes."""
        if self.serving is None:
            return 0
        if self.serving.kv_bytes_per_token <= 0:
            return 0
        fixed = self.weights_bytes + self.overhead_per_node_bytes * self.nodes_per_replica
        kv_bytes = self.memory_per_node_bytes * self.nodes_per_replica - fixed
        return max(0, kv_bytes // self.serving.kv_bytes_per_token)


class LinkPathSpec(_Spec):
    name: str
    nominal_gbps: float = Field(gt=0)
    healthy_gbps: float = Field(gt=0)
    """What the path negotiates when nothing is wrong (RDMA measured)."""


class LinkSpec(_Spec):
    name: str
    nodes: tuple[str, str]
    paths: tuple[LinkPathSpec, ...]
    gid_index: int = 3


class Profile(_Spec):
    """A whole simulated cluster, before anything has happened to it."""

    name: str
    nodes: tuple[NodeSpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    pools: tuple[Pool, ...]
    modes: tuple[Mode, ...] = ()
    default_mode: str | None = None
    """The mode serving when a scenario does not say (its workloads start with one replica)."""
    links: tuple[LinkSpec, ...] = ()
    tick_s: float = Field(default=0.5, gt=0)
    """The engine's time step."""
    scrape_interval_s: float = Field(default=5.0, gt=0)
    """How often metrics are scraped per node / workload (staggered)."""
    node_scrape_interval_s: float | None = Field(default=None, gt=0)
    """How often each node's readings (cards, host memory) are scraped; None: as the rest."""
    series_interval_s: float = Field(default=10.0, gt=0)

    def workload(self, name: str) -> WorkloadSpec | None:
        return next((w for w in self.workloads if w.name == name), None)


def catalogued(spec: WorkloadSpec, catalog: Catalog | None = None) -> WorkloadSpec:
    """`spec` with its model's memory figures from the placement catalogue (tools.placement).

    Tensor parallelism spans the replica's cards (`cards_per_replica` ranks, spread evenly over
    `nodes_per_replica` nodes): weights split among the ranks, GQA heads too, an MLA latent is
    replicated (memoryfit.memory_need). Raises ValueError if the reservation cannot hold the
    model at its context. A workload without a catalogued model is returned as it is.
    """
    catalog = catalog or default_catalog()
    if spec.serving is None or spec.model is None or spec.model not in catalog.models:
        return spec
    model = catalog.model(spec.model)
    ranks = max(1, spec.cards_per_replica)
    per_node = max(1, ranks // spec.nodes_per_replica)
    context = spec.context_length or model.max_context
    fixed = memory_need(model, catalog, 0, tensor_parallel=ranks)
    need = memory_need(model, catalog, context, tensor_parallel=ranks)
    if need.total_bytes * per_node > spec.memory_per_node_bytes:
        raise ValueError(
            f"profile: {spec.name} reserves {spec.memory_per_node_bytes / GIB:.1f} GiB per node, "
            f"but the catalogue's {spec.model} needs {need.total_bytes * per_node / GIB:.1f} GiB "
            f"at context {context:,} over {ranks} rank(s); raise memory_per_node_bytes or lower "
            "context_length (or fix the model in tools/placement/models.yaml)"
        )
    serving = spec.serving.model_copy(
        update={"kv_bytes_per_token": round(model.kv_bytes_per_token(ranks) * ranks)}
    )
    return spec.model_copy(
        update={
            "weights_bytes": model.weight_bytes,
            "overhead_per_node_bytes": (fixed.total_bytes - fixed.weights_bytes) * per_node,
            "serving": serving,
        }
    )


def homelab() -> Profile:
    """docs/architecture.md's default cluster: two GX10, a workstation, a render box, a link."""
    gb10 = CardSpec(model="GB10", memory_bytes=128 * GIB, power_limit_w=140.0)
    blackwell = CardSpec(model="RTX PRO 6000 Blackwell", memory_bytes=96 * GIB, power_limit_w=600.0)
    mps = Sharing(mode="mps", replicas=2)

    def gx10(name: str) -> NodeSpec:
        labels = {HOSTNAME: name, "steward.dev/group": "gx10"}
        return NodeSpec(
            name=name, labels=labels, memory_bytes=128 * GIB, unified_memory=True, cards=(gb10,)
        )

    nodes = (
        gx10("gx10-a"),
        gx10("gx10-b"),
        NodeSpec(
            name="ws-1",
            labels={HOSTNAME: "ws-1", "steward.dev/group": "workstation"},
            memory_bytes=256 * GIB,
            cards=(blackwell.model_copy(update={"sharing": mps}),),
        ),
        NodeSpec(
            name="render-1",
            labels={HOSTNAME: "render-1", "steward.dev/group": "render"},
            memory_bytes=256 * GIB,
            cards=(blackwell, blackwell),
        ),
    )
    workloads = (
        WorkloadSpec(
            name="resident-a", kind="inference", pool="gx10", model="deepseek-v4-flash",
            context_length=131_072, memory_per_node_bytes=110 * GIB,
            serving=ServingSpec(single_stream_tok_s=20.3, aggregate_peak_tok_s=84.5,
                                prefill_tok_s=1_200),
            load_s=180, exit_s=15, node_selector={HOSTNAME: "gx10-a"},
        ),
        WorkloadSpec(
            name="resident-b", kind="inference", pool="gx10", model="qwen3.5-122b-a10b",
            context_length=262_144, memory_per_node_bytes=110 * GIB,
            serving=ServingSpec(single_stream_tok_s=20.8, aggregate_peak_tok_s=85.5,
                                prefill_tok_s=1_500),
            load_s=170, exit_s=15, node_selector={HOSTNAME: "gx10-b"},
        ),
        WorkloadSpec(
            name="beast", kind="inference", pool="gx10", model="glm-5.3-flash",
            context_length=1_048_576, cards_per_replica=2, nodes_per_replica=2,
            memory_per_node_bytes=118 * GIB,
            serving=ServingSpec(single_stream_tok_s=40.9, aggregate_peak_tok_s=95.5,
                                prefill_tok_s=1_800),
            load_s=240, exit_s=20, node_selector={"steward.dev/group": "gx10"},
        ),
        WorkloadSpec(
            name="tts", kind="tts", pool="workstation", replicas=1, model="tts",
            memory_per_node_bytes=20 * GIB, weights_bytes=4 * GIB,
            serving=ServingSpec(single_stream_tok_s=150, aggregate_peak_tok_s=1_200,
                                prefill_tok_s=20_000, kv_bytes_per_token=16 * 1024),
            load_s=30, node_selector={HOSTNAME: "ws-1"},
        ),
        WorkloadSpec(
            name="worker", kind="batch", pool="workstation", replicas=1,
            memory_per_node_bytes=60 * GIB, busy_utilization=0.55, load_s=20,
            node_selector={HOSTNAME: "ws-1"},
        ),
        WorkloadSpec(
            name="render", kind="render", pool="render", cards_per_replica=2,
            memory_per_node_bytes=80 * GIB, busy_utilization=0.97, load_s=15,
            node_selector={HOSTNAME: "render-1"},
        ),
        WorkloadSpec(
            name="burst-llm", kind="inference", pool="burst", model="qwen3-32b",
            context_length=32_768, memory_per_node_bytes=88 * GIB,
            serving=ServingSpec(single_stream_tok_s=28.0, aggregate_peak_tok_s=600,
                                prefill_tok_s=4_000),
            load_s=90, exit_s=10, node_selector={HOSTNAME: "render-1"},
        ),
    )  # fmt: skip
    pools = (
        Pool(name="gx10", workloads=("resident-a", "resident-b", "beast"),
             node_selector={"steward.dev/group": "gx10"}),
        Pool(name="workstation", workloads=("tts", "worker"), node_selector={HOSTNAME: "ws-1"}),
        Pool(name="render", workloads=("render",), node_selector={HOSTNAME: "render-1"}),
        Pool(name="burst", workloads=("burst-llm",), node_selector={HOSTNAME: "render-1"}),
    )  # fmt: skip
    modes = (
        Mode(
            name="split", nodes=("gx10-a", "gx10-b"), workloads=("resident-a", "resident-b"),
            aggregate_peak_tok_s=170.0, single_stream_tok_s=20.5, max_context=262_144,
            description="two residents, one model per GX10 (modo normal)",
        ),
        Mode(
            name="cluster", nodes=("gx10-a", "gx10-b"), workloads=("beast",),
            aggregate_peak_tok_s=95.5, single_stream_tok_s=40.9, max_context=1_048_576,
            description="one model over both GX10, TP=2 (modo bestia)",
        ),
    )  # fmt: skip
    rail = {"nominal_gbps": 200.0, "healthy_gbps": 98.01}
    links = (
        LinkSpec(
            name="gx10-link",
            nodes=("gx10-a", "gx10-b"),
            paths=(LinkPathSpec(name="rail-0", **rail), LinkPathSpec(name="rail-1", **rail)),
            gid_index=3,
        ),
    )
    return Profile(
        name="homelab",
        nodes=nodes,
        workloads=tuple(catalogued(w) for w in workloads),  # memory: the placement catalogue
        pools=pools,
        modes=modes,
        default_mode="cluster",  # the seeds: GLM-5.3-Flash over both GX10 by default
        links=links,
    )


_FLEET_SHAPES: tuple[tuple[str, str, int, int, float, float, float], ...] = (
    # pool, model, cards per replica, GiB per node, single tok/s, peak tok/s, prefill tok/s
    ("llm-large", "llama-3.1-405b-fp8", 8, 8 * 90, 32.0, 2_400.0, 9_000.0),
    ("llm-mid", "qwen3-235b-a22b", 4, 4 * 85, 55.0, 3_000.0, 14_000.0),
    ("llm-small", "qwen3-32b", 1, 80, 60.0, 1_500.0, 12_000.0),
    ("embed", "bge-m3", 1, 20, 400.0, 8_000.0, 60_000.0),
)


def fleet(
    nodes: int, gpus_per_node: int, seed: int = 0, node_scrape_interval_s: float | None = None
) -> Profile:
    """N nodes x M cards of one model, several pools and models, about 70 % of the cards used.

    Memory of the models the catalogue knows (qwen3-32b) comes from it, as on the homelab.

    Deterministic for a seed. Nodes carry a `steward.dev/pool` label; each pool's workloads are
    selected onto its nodes. Tick 1 s; metrics scraped every 30 s per node and workload,
    staggered (the interval of NVIDIA's Prometheus example for dcgm-exporter); a node's readings
    every `node_scrape_interval_s` instead when given.
    """
    if nodes < 1 or gpus_per_node < 1:
        raise ValueError(
            f"fleet needs nodes >= 1 and gpus_per_node >= 1, got {nodes}x{gpus_per_node}"
        )
    rng = random.Random(seed)
    catalog = default_catalog()
    card = CardSpec(model="H200", memory_bytes=141 * GIB, power_limit_w=700.0)
    node_specs: list[NodeSpec] = []
    for i in range(nodes):
        pool = _FLEET_SHAPES[i % len(_FLEET_SHAPES)][0]
        name = f"node-{i:04d}"
        node_specs.append(
            NodeSpec(
                name=name,
                labels={HOSTNAME: name, "steward.dev/pool": pool},
                memory_bytes=2048 * GIB,
                cards=(card,) * gpus_per_node,
            )
        )
    workloads: list[WorkloadSpec] = []
    pools: list[Pool] = []
    for pool, model, shape_cards, gib, single, peak, prefill in _FLEET_SHAPES:
        pool_nodes = sum(1 for n in node_specs if n.labels["steward.dev/pool"] == pool)
        cards = min(shape_cards, gpus_per_node)
        per_node = gpus_per_node // cards
        capacity = pool_nodes * per_node
        n_workloads = max(1, pool_nodes // 5)
        names: list[str] = []
        for j in range(n_workloads):
            share = capacity * 0.7 / n_workloads
            replicas = max(0, int(share + rng.random()))
            name = f"{pool}-{j:03d}"
            names.append(name)
            workloads.append(
                catalogued(WorkloadSpec(
                    name=name, kind="inference", pool=pool, replicas=replicas, model=model,
                    context_length=32_768, cards_per_replica=cards,
                    memory_per_node_bytes=int(gib * GIB * cards / _shape_cards(pool)),
                    weights_bytes=int(gib * GIB * cards / _shape_cards(pool) * 0.7),
                    serving=ServingSpec(single_stream_tok_s=single, aggregate_peak_tok_s=peak,
                                        prefill_tok_s=prefill, kv_bytes_per_token=160 * 1024),
                    load_s=120, node_selector={"steward.dev/pool": pool},
                ), catalog)
            )  # fmt: skip
        pools.append(
            Pool(name=pool, workloads=tuple(names), node_selector={"steward.dev/pool": pool})
        )
    return Profile(
        name=f"fleet-{nodes}x{gpus_per_node}",
        nodes=tuple(node_specs),
        workloads=tuple(workloads),
        pools=tuple(pools),
        tick_s=1.0,
        scrape_interval_s=30.0,
        node_scrape_interval_s=node_scrape_interval_s,
        series_interval_s=60.0,
    )


def _shape_cards(pool: str) -> int:
    return next(s[2] for s in _FLEET_SHAPES if s[0] == pool)
