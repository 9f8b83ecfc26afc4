"""The state, policy and plan `steward bench policy` times the engine on.

A fleet shaped like `lab.sim.profiles.fleet` — N nodes of eight H200, four pools (llm-large,
llm-mid, llm-small, embed), 50 workloads a pool spread five nodes each, about 70 % of the cards
in use, every metric fresh — built straight from tools.model so that building it costs nothing
next to judging it. The plan mixes scale-ups and -downs, placements, cordons and drains.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from policies.loader import EXAMPLES_DIR, load_policy
from policies.model import Policy
from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    PlaceReplica,
    Plan,
    ScaleWorkload,
    UncordonNode,
)
from tools.model import (
    ClusterState,
    Gpu,
    Metric,
    Node,
    Pool,
    ReplicaPlacement,
    Workload,
)

AT = datetime(2026, 3, 4, 15, 0, tzinfo=UTC)  # a Wednesday, 10:00 in New York
GPUS_PER_NODE = 8
NODES_PER_WORKLOAD = 5
SHAPES = (("llm-large", 8), ("llm-mid", 4), ("llm-small", 1), ("embed", 1))


def fleet_policy() -> Policy:
    return load_policy(EXAMPLES_DIR / "fleet.yaml")


def fleet_state(nodes: int, *, dcgm_uuids: bool = False) -> ClusterState:
    """`nodes` nodes of eight H200 cards, a quarter per pool, workloads at ~70 % of the cards.

    `dcgm_uuids`: the cards named as NVIDIA names them (`GPU-` and 32 hex digits, no order
    among a node's cards), not `GPU-0001-3`; so that what sorts series by their labels, as
    Prometheus does, does not list them in the card order by chance."""
    util = Metric.fresh(60.0, AT, "dcgm")
    node_list: list[Node] = []
    by_pool: dict[str, list[Node]] = {pool: [] for pool, _ in SHAPES}
    for i in range(nodes):
        pool = SHAPES[i % len(SHAPES)][0]
        name = f"node-{i:04d}"
        gpus = tuple(
            Gpu(uuid=_uuid(i, g, dcgm_uuids), index=g, model="H200", node=name, utilization=util)
            for g in range(GPUS_PER_NODE)
        )
        node = Node(
            name=name,
            labels={"steward.dev/pool": pool},
            memory_total_bytes=2048 << 30,
            gpus=gpus,
        )
        node_list.append(node)
        by_pool[pool].append(node)
    workloads: list[Workload] = []
    pools: list[Pool] = []
    for pool, cards in SHAPES:
        members = by_pool[pool]
        names = []
        for j in range(0, len(members) - NODES_PER_WORKLOAD + 1, NODES_PER_WORKLOAD):
            group = members[j : j + NODES_PER_WORKLOAD]
            slots = [
                (n.name, tuple(g.uuid for g in n.gpus[k : k + cards]))
                for n in group
                for k in range(0, GPUS_PER_NODE, cards)
            ]
            used = slots[: max(1, len(slots) * 7 // 10)]
            name = f"{pool}-{j // NODES_PER_WORKLOAD:03d}"
            names.append(name)
            workloads.append(
                Workload(
                    name=name,
                    kind="inference",
                    pool=pool,
                    desired_replicas=len(used),
                    ready_replicas=len(used),
                    cards_per_replica=cards,
                    queue_depth=Metric.fresh(3.0, AT, "vllm"),
                    queue_wait_s=Metric.fresh(1.0, AT, "vllm"),
                    placement=tuple(
                        ReplicaPlacement(index=r, nodes=(node,), gpus=uuids, ready=True)
                        for r, (node, uuids) in enumerate(used)
                    ),
                )
            )
        pools.append(
            Pool(name=pool, workloads=tuple(names), node_selector={"steward.dev/pool": pool})
        )
    return ClusterState(
        observed_at=AT,
        source="bench",
        nodes=tuple(node_list),
        workloads=tuple(workloads),
        pools=tuple(pools),
    )


def _uuid(node: int, card: int, dcgm: bool) -> str:
    if dcgm:
        return f"GPU-{uuid.uuid5(uuid.NAMESPACE_OID, f'{node}/{card}')}"
    return f"GPU-{node:04d}-{card}"


def fleet_plan(state: ClusterState, size: int) -> Plan:
    """`size` actions over distinct targets: scales up and down, placements, cordons, drains."""
    workloads = state.workloads
    nodes = state.nodes
    actions: list[Action] = []
    for i in range(size):
        w = workloads[(i * 7) % len(workloads)]
        node = nodes[(i * 13) % len(nodes)]
        kind = i % 10
        if kind < 6:
            step = 1 if i % 2 else -1
            actions.append(ScaleWorkload(workload=w.name, replicas=w.desired_replicas + step))
        elif kind < 8:
            target = next(n for n in nodes if n.labels["steward.dev/pool"] == w.pool)
            actions.append(PlaceReplica(workload=w.name, node=target.name))
        elif kind == 8:
            actions.append(CordonNode(node=node.name) if i % 20 else UncordonNode(node=node.name))
        else:
            actions.append(DrainNode(node=node.name))
    return Plan(actions=tuple(actions), planner="bench")
