"""Cluster states for the placement tests, built from tools.model with the homelab's names.

The homelab of contracts.md: two GX10 (GB10, 128 GiB unified, NVML memory missing), a linked
pair; a workstation whose one Blackwell card is shared through MPS by `tts` and `worker`; a
render box with two Blackwell cards. Switches turn on the seeds' faults.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tools.model import (
    ActiveMode,
    ClusterState,
    Gpu,
    Link,
    LinkPath,
    Metric,
    Node,
    Pool,
    ReplicaPlacement,
    SchedulerView,
    Sharing,
    Taint,
    Workload,
    WorkloadKind,
)

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GIB = 1024**3
HOST = "kubernetes.io/hostname"
BLACKWELL = "RTX PRO 6000 Blackwell"


def fresh(value: float) -> Metric:
    return Metric.fresh(value, AT, "test")


def gx10(name: str, clients: tuple[str, ...] = (), used_gib: float | None = None) -> Node:
    gpu = Gpu(uuid=f"GPU-{name}", index=0, model="GB10", node=name, clients=clients)
    return Node(
        name=name,
        labels={HOST: name, "steward.dev/group": "gx10"},
        memory_total_bytes=128 * GIB,
        memory_used_bytes=fresh(used_gib * GIB) if used_gib is not None else Metric.missing(),
        unified_memory=True,
        gpus=(gpu,),
    )


def card(
    node: str,
    index: int,
    clients: tuple[str, ...] = (),
    *,
    used_gib: float = 0.0,
    sharing: Sharing | None = None,
) -> Gpu:
    return Gpu(
        uuid=f"GPU-{node}-{index}",
        index=index,
        model=BLACKWELL,
        node=node,
        memory_total_bytes=fresh(96 * GIB),
        memory_used_bytes=fresh(used_gib * GIB),
        sharing=sharing or Sharing(),
        clients=clients,
    )


def workload(name: str, kind: WorkloadKind, pool: str, replicas: int = 0, **kw: object) -> Workload:
    return Workload.model_validate(
        {"name": name, "kind": kind, "pool": pool, "desired_replicas": replicas,
         "ready_replicas": replicas, **kw}
    )  # fmt: skip


def homelab(
    *,
    mode: str = "split",
    double_count: bool = False,
    render_busy: bool = False,
    link_gbps: float = 98.01,
    gid_index: int = 3,
) -> ClusterState:
    """The homelab in a mode; `double_count` makes the scheduler count ws-1's MPS card twice."""
    split = mode == "split"
    nodes = (
        gx10("gx10-a", ("resident-a/0",) if split else ("beast/0",), 98.0 if split else None),
        gx10("gx10-b", ("resident-b/0",) if split else ("beast/0",), 82.0 if split else None),
        Node(
            name="ws-1",
            labels={HOST: "ws-1", "steward.dev/group": "workstation"},
            memory_total_bytes=256 * GIB,
            memory_used_bytes=fresh(14 * GIB),
            gpus=(
                card(
                    "ws-1",
                    0,
                    ("tts/0", "worker/0"),
                    used_gib=80,
                    sharing=Sharing(
                        mode="mps",
                        replicas=1 if double_count else 2,
                        mps_memory_limit_bytes=48 * GIB,
                        mps_active_thread_percentage=50,
                    ),
                ),
            ),
            scheduler=SchedulerView(gpu_allocatable=1 if double_count else 2, gpu_allocated=2),
        ),
        Node(
            name="render-1",
            labels={HOST: "render-1", "steward.dev/group": "render"},
            memory_total_bytes=256 * GIB,
            memory_used_bytes=fresh(6 * GIB),
            gpus=(
                card(
                    "render-1", 0, ("render/0",) if render_busy else (), used_gib=70 * render_busy
                ),
                card(
                    "render-1", 1, ("render/0",) if render_busy else (), used_gib=70 * render_busy
                ),
            ),
        ),
    )
    workloads = (
        workload("resident-a", "inference", "gx10", int(split), model="deepseek-v4-flash",
                 context_length=131_072),
        workload("resident-b", "inference", "gx10", int(split), model="qwen3.5-122b-a10b",
                 context_length=262_144),
        workload("beast", "inference", "gx10", int(not split), model="glm-5.3-flash",
                 context_length=1_048_576, cards_per_replica=2, nodes_per_replica=2,
                 placement=() if split else (ReplicaPlacement(
                     index=0, nodes=("gx10-a", "gx10-b"), gpus=("GPU-gx10-a", "GPU-gx10-b"),
                     ready=True),)),
        workload("tts", "tts", "workstation", 1),
        workload("worker", "batch", "workstation", 1),
        workload("render", "render", "render", int(render_busy), cards_per_replica=2),
        workload("burst-llm", "inference", "burst", 0, model="qwen3-32b", context_length=32_768),
    )  # fmt: skip
    pools = (
        Pool(name="gx10", workloads=("resident-a", "resident-b", "beast"),
             node_selector={"steward.dev/group": "gx10"}),
        Pool(name="workstation", workloads=("tts", "worker"), node_selector={HOST: "ws-1"}),
        Pool(name="render", workloads=("render",), node_selector={HOST: "render-1"}),
        Pool(name="burst", workloads=("burst-llm",), node_selector={HOST: "render-1"}),
    )  # fmt: skip
    paths = tuple(
        LinkPath(
            name=name,
            nominal_gbps=200.0,
            negotiated_gbps=fresh(link_gbps),
            gid_index=fresh(gid_index),
        )
        for name in ("rail-0", "rail-1")
    )
    link = Link(name="gx10-link", nodes=("gx10-a", "gx10-b"), paths=paths, configured_gid_index=3)
    return ClusterState(
        observed_at=AT,
        nodes=nodes,
        workloads=workloads,
        pools=pools,
        links=(link,),
        active_mode=ActiveMode(name=mode, since=AT),
    )


def rebuild(state: ClusterState, **update: object) -> ClusterState:
    """A new state with some fields replaced (model_copy would carry cached lookups over)."""
    fields = {name: getattr(state, name) for name in ClusterState.model_fields}
    return ClusterState.model_validate({**fields, **update})


def with_node(state: ClusterState, name: str, **changes: object) -> ClusterState:
    """`state` with one node's fields changed (cordoned, ready, taints, ...)."""
    nodes = tuple(n.model_copy(update=changes) if n.name == name else n for n in state.nodes)
    return rebuild(state, nodes=nodes)


def idle_gx10_pair(**node_changes: object) -> ClusterState:
    """Both GX10 free (mode off), for TP-pair and unified-memory placement tests."""
    state = homelab(mode="split")
    free = tuple(
        n.model_copy(
            update={"gpus": tuple(g.model_copy(update={"clients": ()}) for g in n.gpus),
                    "memory_used_bytes": fresh(6 * GIB), **node_changes}
        )
        if n.name.startswith("gx10")
        else n
        for n in state.nodes
    )  # fmt: skip
    workloads = tuple(
        w.model_copy(update={"desired_replicas": 0, "ready_replicas": 0, "placement": ()})
        if w.pool == "gx10"
        else w
        for w in state.workloads
    )
    return rebuild(state, nodes=free, workloads=workloads, active_mode=None)


__all__ = ["AT", "BLACKWELL", "GIB", "Taint", "homelab", "idle_gx10_pair", "rebuild", "with_node"]
