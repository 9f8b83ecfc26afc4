"""Cluster states and policies for the policy tests, built directly from tools.model.

`homelab()` mirrors the contract's homelab (gx10 pair in mode cluster, ws-1 with tts + worker
on one MPS card, render-1 with two cards for render and burst-llm), with fresh metrics, at a
fixed time. Tests change what they need with `with_workload` / `with_node` / `with_link`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from policies.engine import judge
from policies.history import History
from policies.judgement import Judgement
from policies.loader import load_default_policy
from policies.model import Policy
from tools.actions import Action, Plan
from tools.model import (
    ActiveMode,
    ClusterState,
    Gpu,
    Link,
    LinkPath,
    Metric,
    Mode,
    Node,
    Pool,
    ReplicaPlacement,
    Sharing,
    Workload,
)

# A Monday, 03:00 in Madrid (outside working hours): approvals for rotations are not needed.
NIGHT = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
# The same Monday, 11:00 in Madrid.
DAY = NIGHT + timedelta(hours=8)
BLACKWELL = "RTX PRO 6000 Blackwell"


def fresh(value: float, at: datetime = NIGHT) -> Metric:
    return Metric.fresh(value, at, "test")


def _gpu(uuid: str, node: str, model: str, util: float, index: int = 0, **kw: Any) -> Gpu:
    return Gpu(uuid=uuid, index=index, model=model, node=node, utilization=fresh(util), **kw)


def homelab(at: datetime = NIGHT, render_util: float = 0.0) -> ClusterState:
    nodes = (
        Node(
            name="gx10-a",
            labels={"steward.dev/group": "gx10"},
            memory_total_bytes=128 << 30,
            unified_memory=True,
            gpus=(_gpu("GPU-gx10-a", "gx10-a", "GB10", 70.0),),
        ),
        Node(
            name="gx10-b",
            labels={"steward.dev/group": "gx10"},
            memory_total_bytes=128 << 30,
            unified_memory=True,
            gpus=(_gpu("GPU-gx10-b", "gx10-b", "GB10", 70.0),),
        ),
        Node(
            name="ws-1",
            labels={"steward.dev/group": "workstation"},
            memory_total_bytes=256 << 30,
            gpus=(
                _gpu("GPU-ws", "ws-1", BLACKWELL, 40.0, sharing=Sharing(mode="mps", replicas=2)),
            ),
        ),
        Node(
            name="render-1",
            labels={"steward.dev/group": "render"},
            memory_total_bytes=256 << 30,
            gpus=(
                _gpu("GPU-r0", "render-1", BLACKWELL, render_util, 0),
                _gpu("GPU-r1", "render-1", BLACKWELL, render_util, 1),
            ),
        ),
    )

    def placed(index: int, nodes: tuple[str, ...], gpus: tuple[str, ...]) -> ReplicaPlacement:
        return ReplicaPlacement(index=index, nodes=nodes, gpus=gpus, ready=True)

    workloads = (
        Workload(name="resident-a", kind="inference", pool="gx10", desired_replicas=0,
                 ready_replicas=0, model="deepseek-v4-flash", context_length=131_072,
                 queue_depth=fresh(0), queue_wait_s=fresh(0)),
        Workload(name="resident-b", kind="inference", pool="gx10", desired_replicas=0,
                 ready_replicas=0, model="qwen3.5-122b-a10b", context_length=262_144,
                 queue_depth=fresh(0), queue_wait_s=fresh(0)),
        Workload(name="beast", kind="inference", pool="gx10", desired_replicas=1,
                 ready_replicas=1, cards_per_replica=2, nodes_per_replica=2,
                 model="glm-5.3-flash", context_length=1_048_576, queue_depth=fresh(2),
                 queue_wait_s=fresh(4),
                 placement=(placed(0, ("gx10-a", "gx10-b"), ("GPU-gx10-a", "GPU-gx10-b")),)),
        Workload(name="tts", kind="tts", pool="workstation", desired_replicas=1,
                 ready_replicas=1, queue_depth=fresh(0),
                 placement=(placed(0, ("ws-1",), ("GPU-ws",)),)),
        Workload(name="worker", kind="batch", pool="workstation", desired_replicas=1,
                 ready_replicas=1, placement=(placed(0, ("ws-1",), ("GPU-ws",)),)),
        Workload(name="render", kind="render", pool="render", desired_replicas=1,
                 ready_replicas=1, cards_per_replica=2,
                 placement=(placed(0, ("render-1",), ("GPU-r0", "GPU-r1")),)),
        Workload(name="burst-llm", kind="inference", pool="burst", desired_replicas=0,
                 ready_replicas=0, model="qwen3-32b", queue_depth=fresh(0)),
    )  # fmt: skip
    pools = (
        Pool(name="gx10", workloads=("resident-a", "resident-b", "beast"),
             node_selector={"steward.dev/group": "gx10"}),
        Pool(name="workstation", workloads=("tts", "worker")),
        Pool(name="render", workloads=("render",)),
        Pool(name="burst", workloads=("burst-llm",)),
    )  # fmt: skip
    modes = (
        Mode(name="split", nodes=("gx10-a", "gx10-b"), workloads=("resident-a", "resident-b"),
             aggregate_peak_tok_s=170, single_stream_tok_s=20.5, max_context=262_144),
        Mode(name="cluster", nodes=("gx10-a", "gx10-b"), workloads=("beast",),
             aggregate_peak_tok_s=95.5, single_stream_tok_s=40.9, max_context=1_048_576),
    )  # fmt: skip
    link = Link(
        name="gx10-link",
        nodes=("gx10-a", "gx10-b"),
        paths=tuple(
            LinkPath(name=f"rail-{i}", nominal_gbps=200, negotiated_gbps=fresh(98.01),
                     gid_index=fresh(3))
            for i in (0, 1)
        ),
        configured_gid_index=3,
    )  # fmt: skip
    state = ClusterState(
        observed_at=at,
        source="test",
        nodes=nodes,
        workloads=workloads,
        pools=pools,
        modes=modes,
        active_mode=ActiveMode(name="cluster", since=at - timedelta(hours=2)),
        links=(link,),
    )
    return state


def replace(model: Any, **update: Any) -> Any:
    """A validated copy of a model with fields replaced (model_copy keeps stale caches)."""
    fields = {name: getattr(model, name) for name in type(model).model_fields}
    return type(model).model_validate({**fields, **update})


def with_workload(state: ClusterState, name: str, **update: Any) -> ClusterState:
    workloads = tuple(replace(w, **update) if w.name == name else w for w in state.workloads)
    return replace(state, workloads=workloads)


def with_node(state: ClusterState, name: str, **update: Any) -> ClusterState:
    nodes = tuple(replace(n, **update) if n.name == name else n for n in state.nodes)
    return replace(state, nodes=nodes)


def with_path(state: ClusterState, path: str, **update: Any) -> ClusterState:
    links = tuple(
        replace(link, paths=tuple(replace(p, **update) if p.name == path else p
                                  for p in link.paths))
        for link in state.links
    )  # fmt: skip
    return replace(state, links=links)


def default_policy(**update: Any) -> Policy:
    """The shipped homelab policy, with top-level fields replaced."""
    policy = load_default_policy()
    return replace(policy, **update) if update else policy


def without_approvals(*names: str) -> Policy:
    """The default policy without the approval rules named (for tests of other rules that use
    cordons as their cheapest actions)."""
    kept = tuple(r for r in default_policy().approvals if r.name not in names)
    return default_policy(approvals=kept)


NODES_UNGATED = ("cordon_any_node", "uncordon_not_own")
"""The approval rules that make every cordon and a person's uncordon wait for a person."""


def run(
    *actions: Action,
    state: ClusterState | None = None,
    policy: Policy | None = None,
    history: History | None = None,
    now: datetime | None = None,
) -> Judgement:
    """Judge `actions` as one plan (homelab state, default policy, empty history by default)."""
    state = state if state is not None else homelab()
    policy = policy if policy is not None else default_policy()
    return judge(Plan(actions=actions), state, policy, history or History(), now)


def watched(state: ClusterState, policy: Policy, since: timedelta) -> History:
    """A history that has watched the cluster for `since` and seen every pool as it is now."""
    start = replace(state, observed_at=state.observed_at - since)
    return History().observed(start, policy).observed(state, policy)
