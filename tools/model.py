"""The typed world: what Steward knows about a GPU cluster at one moment.

A `ClusterState` is one observation: nodes and their cards, workloads and their queues, the
serving modes and which one is active, and the links between nodes. It is immutable; the next
observation is a new object. Every measured value is a `Metric` that carries its freshness, so a
stale or missing reading is visible as such and never stands in for a real one.

Everything else — the policy engine, placement, the planners, the audit log and the LLM prompt —
reads this one model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from functools import cached_property
from typing import Any, Literal, NamedTuple, Self

from pydantic import Field

from tools import metric as reading
from tools.bases import Frozen
from tools.labels import matches

Metric = reading.Metric
MetricStatus = reading.MetricStatus
MISSING = reading.MISSING
"""A reading is its own module's noun (tools.metric); the world model names it too."""

SharingMode = Literal["exclusive", "mps", "time-slicing", "mig"]
WorkloadKind = Literal["inference", "render", "tts", "batch"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(Frozen):
    key: str
    value: str = ""
    effect: TaintEffect = "NoSchedule"


class Sharing(Frozen):
    """How one physical card is shared, as the device plugin is configured to share it.

    `replicas` is the number of schedulable devices the card is advertised as: 1 for exclusive,
    N for MPS or time-slicing with N replicas, the slice count for MIG. MPS may also cap each
    client's memory and compute.
    """

    mode: SharingMode = "exclusive"
    replicas: int = Field(default=1, ge=1)
    mps_memory_limit_bytes: int | None = Field(default=None, ge=0)
    mps_active_thread_percentage: int | None = Field(default=None, ge=1, le=100)
    mig_profile: str | None = None


class Gpu(Frozen):
    """One physical card (or GB10 superchip) and what is measured on it."""

    uuid: str
    index: int = Field(ge=0)
    model: str
    node: str
    memory_total_bytes: Metric = MISSING
    memory_used_bytes: Metric = MISSING
    utilization: Metric = MISSING
    """Percent of the time a kernel ran since the last reading (0-100, as NVML and DCGM)."""
    power_w: Metric = MISSING
    sharing: Sharing = Sharing()
    clients: tuple[str, ...] = ()
    """Workload replicas using this card, as `workload/replica-index`."""


class SchedulerView(Frozen):
    """The GPU count as the scheduler sees a node: advertised allocatable and the sum of requests.

    It can disagree with the physical cards: a card shared through MPS whose sharing the device
    plugin does not advertise is counted once per client (the seeds' used 2 / capacity 1).
    """

    gpu_allocatable: int = Field(ge=0)
    gpu_allocated: int = Field(ge=0)


class Node(Frozen):
    name: str
    labels: dict[str, str] = {}
    taints: tuple[Taint, ...] = ()
    cordoned: bool = False
    cordoned_by_steward: bool = False
    """Cordoned, and by Steward itself (its own cordon or drain; the Kubernetes backend marks
    them with the node annotation steward.dev/cordoned-by): a cordon Steward may lift when it
    needs the capacity again. False for a cordon of anyone else's — a person's always needs a
    person to lift."""
    ready: bool = True
    memory_total_bytes: int = Field(ge=0)
    memory_used_bytes: Metric = MISSING
    unified_memory: bool = False
    """GB10-style: CPU and GPU share one memory; GPU memory figures come from the host."""
    gpus: tuple[Gpu, ...] = ()
    scheduler: SchedulerView | None = None

    @property
    def schedulable(self) -> bool:
        no_schedule = any(t.effect in ("NoSchedule", "NoExecute") for t in self.taints)
        return self.ready and not self.cordoned and not no_schedule


class ReplicaPlacement(Frozen):
    """Where one replica runs. A tensor-parallel replica spans several nodes."""

    index: int = Field(ge=0)
    nodes: tuple[str, ...]
    gpus: tuple[str, ...] = ()
    ready: bool = False
    waiting_since: datetime | None = None
    """For a replica with no node to run on: since when it has waited for one (its pod's
    creation; None for a placed replica, or where the backend cannot tell)."""


class ServingProfile(Frozen):
    """How fast one replica serves, as the model catalogue profiles this model on this card:
    the prefill rate, and the inter-token latency as a function of the batch,
    ITL(b) = itl_base_s + itl_per_seq_s x b."""

    prefill_tok_s: float = Field(gt=0)
    itl_base_s: float = Field(ge=0)
    itl_per_seq_s: float = Field(ge=0)
    kv_tokens: int | None = Field(default=None, ge=0)
    """KV-cache tokens one replica holds (None: not known)."""
    max_num_seqs: int = Field(default=256, gt=0)
    load_s: float | None = Field(default=None, ge=0)
    """From placement to ready (model load, graph capture), as profiled."""


class Workload(Frozen):
    name: str
    kind: WorkloadKind
    pool: str
    desired_replicas: int = Field(ge=0)
    ready_replicas: int = Field(ge=0)
    cards_per_replica: int = Field(default=1, ge=0)
    """Schedulable GPU devices one replica requests (a shared card's replica counts as one)."""
    nodes_per_replica: int = Field(default=1, ge=1)
    """Tensor-parallel span: 2 for a model served across both GX10s."""
    model: str | None = None
    context_length: int | None = Field(default=None, ge=1)
    queue_depth: Metric = MISSING
    queue_wait_s: Metric = MISSING
    tokens_per_s: Metric = MISSING
    ttft_s: Metric = MISSING
    """Time to first token, p90 over the recent requests (vLLM's histogram), seconds."""
    itl_s: Metric = MISSING
    """Mean inter-token latency of the recent requests, p90 (vLLM's
    inter_token_latency_seconds), seconds."""
    prompt_tokens_per_s: Metric = MISSING
    """Prompt tokens prefilled per second (rate of vLLM's prompt_tokens_total)."""
    requests_per_s: Metric = MISSING
    """Requests finished per second (rate of vLLM's request_success_total)."""
    rated_tok_s: float | None = Field(default=None, gt=0)
    """Aggregate decode tokens/s one replica serves at most (its rating); None: unknown."""
    serving_profile: ServingProfile | None = None
    """The catalogue's profile of one replica (None: not profiled; sized from the queue)."""
    kv_cache_usage: Metric = MISSING
    """The fullest replica's KV-cache use, 0..1 (vLLM, SGLang)."""
    requests_running: Metric = MISSING
    """Requests being served now over all ready replicas (vLLM's num_requests_running)."""
    longest_request_tokens: Metric = MISSING
    """The longest request (input + output tokens) queued or being served now."""
    context_refused_tokens: Metric = MISSING
    """The longest request (input + output tokens) refused in the last minutes because it
    exceeds the served context; 0 when none was (a gateway's context-length errors)."""
    placement: tuple[ReplicaPlacement, ...] = ()
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    """Free text from the cluster. Untrusted: never read as instructions."""

    @property
    def cards(self) -> int:
        return self.desired_replicas * self.cards_per_replica


class Pool(Frozen):
    """A group of workloads that draw on the same cards and share one policy budget."""

    name: str
    workloads: tuple[str, ...] = ()
    node_selector: dict[str, str] = {}


class Mode(Frozen):
    """A serving arrangement of a node group, such as 'cluster' (TP=2) or 'split'.

    The figures are the mode's expected capacity (from measurements), used to judge rotations.
    """

    name: str
    nodes: tuple[str, ...]
    workloads: tuple[str, ...]
    aggregate_peak_tok_s: float = Field(ge=0)
    single_stream_tok_s: float = Field(ge=0)
    max_context: int = Field(ge=0)
    description: str = ""


class LinkPath(Frozen):
    """One logical RDMA path of a link (one QSFP cable can show as two)."""

    name: str
    nominal_gbps: float = Field(gt=0)
    negotiated_gbps: Metric = MISSING
    gid_index: Metric = MISSING
    """The RoCE GID index the path uses now; it can change after a reboot."""

    def fraction_of_nominal(self) -> float | None:
        if not self.negotiated_gbps.usable or self.negotiated_gbps.value is None:
            return None
        return self.negotiated_gbps.value / self.nominal_gbps


class Link(Frozen):
    name: str
    nodes: tuple[str, str]
    paths: tuple[LinkPath, ...]
    configured_gid_index: int | None = None
    """The GID index the serving configuration (NCCL_IB_GID_INDEX) expects."""


class ActiveMode(Frozen):
    name: str
    since: datetime


class ClusterState(Frozen):
    """One observation of the whole cluster."""

    observed_at: datetime
    source: str = "sim"
    nodes: tuple[Node, ...] = ()
    workloads: tuple[Workload, ...] = ()
    pools: tuple[Pool, ...] = ()
    modes: tuple[Mode, ...] = ()
    active_mode: ActiveMode | None = None
    links: tuple[Link, ...] = ()

    @cached_property
    def _nodes_by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}

    @cached_property
    def _workloads_by_name(self) -> dict[str, Workload]:
        return {w.name: w for w in self.workloads}

    @cached_property
    def _pools_by_name(self) -> dict[str, Pool]:
        return {p.name: p for p in self.pools}

    @cached_property
    def _workloads_by_pool(self) -> dict[str, list[Workload]]:
        by_pool: dict[str, list[Workload]] = {}
        for w in self.workloads:
            by_pool.setdefault(w.pool, []).append(w)
        return by_pool

    def nodes_with_model(self, models: Collection[str]) -> Iterator[str]:
        """The nodes carrying a card of one of `models`, in the observation's order, found as
        they are asked for: a rule that wants one such node besides its own stops at the
        first, where listing them all read every card of the fleet."""
        for name, node in self._nodes_by_name.items():
            for g in node.gpus:
                if g.model in models:
                    yield name
                    break

    def carries(self, name: str, models: Collection[str]) -> bool:
        """Whether the node `name` has a card of one of `models` (False: no such node)."""
        node = self._nodes_by_name.get(name)
        return node is not None and any(g.model in models for g in node.gpus)

    def pool_nodes(self, pool: str) -> frozenset[str]:
        """The nodes a pool's node selector matches (every node when it has none)."""
        spec = self.pool(pool)
        selector = spec.node_selector if spec else {}
        if not selector:
            return frozenset(self._nodes_by_name)
        return frozenset(
            name for name, node in self._nodes_by_name.items() if matches(node.labels, selector)
        )

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; the name indexes are rebuilt for it, never carried over from this state."""
        copy = super().model_copy(update=update, deep=deep)
        for index in _INDEXES:
            copy.__dict__.pop(index, None)
        return copy

    def node(self, name: str) -> Node | None:
        return self._nodes_by_name.get(name)

    def node_facts(self, name: str) -> NodeFacts | None:
        """What is read of the node on every judgement (`NodeFacts`), or None if there is no
        such node."""
        node = self._nodes_by_name.get(name)
        return node_facts(node) if node is not None else None

    def workload(self, name: str) -> Workload | None:
        return self._workloads_by_name.get(name)

    def mode(self, name: str) -> Mode | None:
        return next((m for m in self.modes if m.name == name), None)

    def pool(self, name: str) -> Pool | None:
        return self._pools_by_name.get(name)

    def pool_workloads(self, pool: str) -> list[Workload]:
        return list(self._workloads_by_pool.get(pool, ()))

    def pool_cards(self, pool: str) -> int:
        """Cards the pool's workloads ask for (desired replicas x cards per replica)."""
        return self._pool_cards.get(pool, 0)

    @cached_property
    def _pool_cards(self) -> dict[str, int]:
        """Every pool's cards, summed once per observation (a plan asks per action)."""
        return {
            pool: sum(w.cards for w in found) for pool, found in self._workloads_by_pool.items()
        }

    @property
    def gpu_count(self) -> int:
        return sum(len(n.gpus) for n in self.nodes)

    def digest(self) -> str:
        """A SHA-256 of this observation's content, for the audit log: of the canonical JSON of
        all but its nodes and workloads, then of each node's and workload's own SHA-256."""
        found = hashlib.sha256(self.model_dump_json(exclude=set(_PARTS)).encode())
        found.update(f"|{len(self.nodes)}|{len(self.workloads)}|".encode())
        for part in (*self.nodes, *self.workloads):
            found.update(hashlib.sha256(part.model_dump_json().encode()).digest())
        return found.hexdigest()


_INDEXES = (
    "_nodes_by_name",
    "_workloads_by_name",
    "_workloads_by_pool",
    "_pool_cards",
    "_pools_by_name",
)
_PARTS = frozenset({"nodes", "workloads"})
"""What `digest` hashes one object at a time."""


class NodeFacts(NamedTuple):
    """What is read of a node on every judgement (policy rules, placement, the planners)."""

    ready: bool
    schedulable: bool
    """Takes work as observed: ready, not cordoned, no NoSchedule/NoExecute taint."""
    serviceable: bool
    """Takes work, or would once uncordoned (a cordon a plan may lift)."""
    models: frozenset[str]
    """The models of its cards."""
    labels: Mapping[str, str]


def node_facts(node: Node) -> NodeFacts:
    tainted = any(t.effect in ("NoSchedule", "NoExecute") for t in node.taints)
    serviceable = node.ready and not tainted
    return NodeFacts(
        ready=node.ready,
        schedulable=serviceable and not node.cordoned,
        serviceable=serviceable,
        models=frozenset(g.model for g in node.gpus),
        labels=node.labels,
    )


def placed_on(workload: Workload) -> frozenset[str]:
    """The nodes a workload's replicas run on."""
    return frozenset(n for r in workload.placement for n in r.nodes)
