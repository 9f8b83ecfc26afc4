"""Properties of placement over random clusters: never a node that must not be used, never more
than a card or a node holds, never negative free capacity, always the same answer."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.placement.world import AT, GIB
from tools.model import (
    ClusterState,
    Gpu,
    Link,
    LinkPath,
    Metric,
    Node,
    Pool,
    Sharing,
    Taint,
    Workload,
)
from tools.placement import (
    PlacementHints,
    explain_placement,
    load_catalog,
    node_capacity,
    pick_node,
    pick_nodes,
)
from tools.placement.demand import demand_of

CATALOG = load_catalog()
MODELS = [None, "qwen3-32b", "qwen3.5-122b-a10b", "deepseek-v4-flash"]
SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def _metric(value: float | None) -> Metric:
    return Metric.missing() if value is None else Metric.fresh(value, AT)


@st.composite
def gpus(draw: st.DrawFn, node: str, unified: bool) -> tuple[Gpu, ...]:
    count = 1 if unified else draw(st.integers(0, 4))
    out = []
    for i in range(count):
        mode = (
            "exclusive"
            if unified
            else draw(st.sampled_from(["exclusive", "mps", "time-slicing", "mig"]))
        )
        replicas = 1 if mode == "exclusive" else draw(st.integers(1, 4))
        in_use = draw(st.sampled_from([0, 0, 1, replicas, replicas + 1]))
        clients = tuple(f"c{i}/{k}" for k in range(in_use))
        total = draw(st.sampled_from([None, 48, 80, 96]))
        used = None if total is None else draw(st.integers(0, total))
        limit = draw(st.sampled_from([None, 16, 40])) if mode == "mps" else None
        out.append(
            Gpu(
                uuid=f"{node}-gpu{i}", index=i, node=node,
                model=draw(st.sampled_from(["H100", "RTX PRO 6000 Blackwell", "L4"])),
                memory_total_bytes=_metric(None if total is None else total * GIB),
                memory_used_bytes=_metric(None if used is None else used * GIB),
                sharing=Sharing(
                    mode=mode, replicas=replicas,
                    mps_memory_limit_bytes=None if limit is None else limit * GIB,
                    mig_profile="1g.20gb" if mode == "mig" else None,
                ),
                clients=clients,
            )
        )  # fmt: skip
    return tuple(out)


@st.composite
def clusters(draw: st.DrawFn, healthy: bool = False) -> ClusterState:
    """Random clusters; `healthy` ones have every node ready, uncordoned and untainted."""
    nodes = []
    for i in range(draw(st.integers(2, 7))):
        name = f"n{i}"
        unified = draw(st.booleans())
        total = 128 if unified else 256
        used = draw(st.sampled_from([None, 6, 40, 120]))
        taints = draw(
            st.lists(
                st.builds(
                    Taint,
                    key=st.sampled_from(["maintenance", "spot"]),
                    effect=st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
                ),
                max_size=0 if healthy else draw(st.sampled_from([0, 0, 0, 2])),
            )
        )
        nodes.append(
            Node(
                name=name, labels={"pool": draw(st.sampled_from(["a", "b"]))},
                cordoned=not healthy and draw(st.sampled_from([False, False, False, True])),
                ready=healthy or draw(st.sampled_from([True, True, True, False])),
                taints=tuple(taints),
                memory_total_bytes=total * GIB,
                memory_used_bytes=_metric(None if used is None else used * GIB),
                unified_memory=unified, gpus=draw(gpus(name, unified)),
            )
        )  # fmt: skip
    names = [n.name for n in nodes]
    links = tuple(
        Link(
            name=f"l{i}",
            nodes=(a, b),
            paths=(LinkPath(name="p", nominal_gbps=200, negotiated_gbps=_metric(98.0)),),
        )
        for i, (a, b) in enumerate(zip(names[::2], names[1::2], strict=False))
    )
    return ClusterState(
        observed_at=AT, nodes=tuple(nodes), links=links,
        pools=(Pool(name="a", node_selector={"pool": "a"}), Pool(name="any")),
    )  # fmt: skip


@st.composite
def workloads(draw: st.DrawFn, spans: tuple[int, ...] = (1, 2)) -> Workload:
    span = draw(st.sampled_from(spans))
    return Workload(
        name="w", kind=draw(st.sampled_from(["inference", "render", "tts", "batch"])),
        pool=draw(st.sampled_from(["a", "any"])), desired_replicas=0, ready_replicas=0,
        cards_per_replica=span * draw(st.integers(0, 2)), nodes_per_replica=span,
        model=draw(st.sampled_from(MODELS)),
        context_length=draw(st.sampled_from([4096, 65_536, 262_144])),
    )  # fmt: skip


hints_strategy = st.builds(
    PlacementHints,
    strategy=st.sampled_from(["spread", "pack"]),
    tolerations=st.sampled_from([(), ("spot",)]),
)


@SETTINGS
@given(clusters(), workloads(), hints_strategy)
def test_never_a_cordoned_unready_or_untolerated_tainted_node(
    state: ClusterState, workload: Workload, hints: PlacementHints
) -> None:
    for candidate in pick_node(workload, state, hints, catalog=CATALOG):
        for name in candidate.nodes:
            node = state.node(name)
            assert node is not None
            assert not node.cordoned and node.ready
            hard = {t.key for t in node.taints if t.effect != "PreferNoSchedule"}
            assert hard <= set(hints.tolerations)


def _assert_within_capacity(
    state: ClusterState, workload: Workload, hints: PlacementHints, replicas: int
) -> None:
    caps = node_capacity(state, CATALOG)
    demand = demand_of(workload, state, hints, CATALOG)
    placed = pick_nodes(workload, state, replicas, hints, catalog=CATALOG)
    assert len(placed) <= replicas
    per_card: dict[str, int] = {}
    per_host: dict[str, int] = {}
    for candidate in placed:
        assert candidate.free_slots_after >= 0
        assert candidate.memory_free_after_bytes is None or candidate.memory_free_after_bytes >= 0
        assert len(candidate.nodes) == workload.nodes_per_replica
        assert len(candidate.gpus) == len(set(candidate.gpus)) == workload.cards_per_replica
        for uuid in candidate.gpus:
            per_card[uuid] = per_card.get(uuid, 0) + 1
        for name in candidate.nodes:
            per_host[name] = per_host.get(name, 0) + 1
    cards = {c.uuid: c for cap in caps.values() for c in cap.cards}
    for uuid, taken in per_card.items():
        card = cards[uuid]
        assert card.sharing in demand.sharing
        assert taken <= card.free_slots
        known = demand.card_bytes is not None and card.memory_free_bytes is not None
        if known and not card.unified_memory:
            assert taken * (demand.card_bytes or 0) <= (card.memory_free_bytes or 0)
    for name, taken in per_host.items():
        cap = caps[name]
        if cap.unified_memory and demand.host_bytes is not None:
            assert taken * demand.host_bytes <= cap.memory_free_bytes


@SETTINGS
@given(clusters(), workloads(), hints_strategy, st.integers(1, 12))
def test_never_more_cards_or_memory_than_there_is(
    state: ClusterState, workload: Workload, hints: PlacementHints, replicas: int
) -> None:
    _assert_within_capacity(state, workload, hints, replicas)


@SETTINGS
@given(clusters(healthy=True), workloads(spans=(2,)), hints_strategy, st.integers(1, 6))
def test_tensor_parallel_pairs_never_overcommit_either_node(
    state: ClusterState, workload: Workload, hints: PlacementHints, replicas: int
) -> None:
    _assert_within_capacity(state, workload, hints, replicas)
    for candidate in pick_nodes(workload, state, replicas, hints, catalog=CATALOG):
        assert candidate.link is not None
        assert set(candidate.nodes) in [set(link.nodes) for link in state.links]


@SETTINGS
@given(clusters())
def test_free_capacity_is_never_negative(state: ClusterState) -> None:
    for cap in node_capacity(state, CATALOG).values():
        assert cap.free_slots >= 0
        assert cap.memory_free_bytes >= 0
        assert 0 <= cap.memory_used_bytes <= cap.memory_total_bytes
        for card in cap.cards:
            assert card.free_slots >= 0
            assert card.slots >= 1
            assert card.memory_free_bytes is None or card.memory_free_bytes >= 0


@SETTINGS
@given(clusters(), workloads(), hints_strategy)
def test_every_node_is_either_a_candidate_or_rejected_and_the_answer_repeats(
    state: ClusterState, workload: Workload, hints: PlacementHints
) -> None:
    placement = explain_placement(workload, state, hints, catalog=CATALOG)
    seen = {n for c in placement.candidates for n in c.nodes}
    seen |= {n for r in placement.rejected for n in r.nodes}
    if workload.nodes_per_replica == 1:
        assert seen == {n.name for n in state.nodes}
    assert all(r.reasons for r in placement.rejected)
    assert [c.rank for c in placement.candidates] == list(range(1, len(placement.candidates) + 1))
    assert explain_placement(workload, state, hints, catalog=CATALOG) == placement


@SETTINGS
@given(clusters(), workloads(), hints_strategy, st.randoms(use_true_random=False))
def test_the_order_nodes_are_listed_in_changes_nothing(
    state: ClusterState, workload: Workload, hints: PlacementHints, rng: random.Random
) -> None:
    nodes = list(state.nodes)
    rng.shuffle(nodes)
    shuffled = ClusterState(
        observed_at=state.observed_at, nodes=tuple(nodes), links=state.links, pools=state.pools
    )
    assert pick_node(workload, shuffled, hints, catalog=CATALOG) == pick_node(
        workload, state, hints, catalog=CATALOG
    )


@SETTINGS
@given(clusters(), workloads(), hints_strategy)
def test_the_first_replica_goes_where_the_ranking_puts_first(
    state: ClusterState, workload: Workload, hints: PlacementHints
) -> None:
    ranked = pick_node(workload, state, hints, catalog=CATALOG)
    placed = pick_nodes(workload, state, 1, hints, catalog=CATALOG)
    assert [c.nodes for c in placed] == [c.nodes for c in ranked[:1]]
    assert [c.gpus for c in placed] == [c.gpus for c in ranked[:1]]


@st.composite
def fleets(draw: st.DrawFn) -> ClusterState:
    """Many copies of a few kinds of node (some soft-tainted), as a fleet is."""
    nodes = []
    for kind in range(draw(st.integers(1, 3))):
        template = draw(gpus(f"k{kind}", unified=False))
        for copy in range(draw(st.integers(2, 8))):
            name = f"k{kind}-{copy:02d}"
            soft = draw(st.sampled_from([(), (), (Taint(key="spot", effect="PreferNoSchedule"),)]))
            nodes.append(
                Node(
                    name=name, labels={"pool": "a"}, taints=soft, memory_total_bytes=256 * GIB,
                    memory_used_bytes=_metric(6 * GIB),
                    gpus=tuple(
                        g.model_copy(update={"uuid": f"{name}-{g.index}", "node": name})
                        for g in template
                    ),
                )
            )  # fmt: skip
    return ClusterState(observed_at=AT, nodes=tuple(nodes), pools=(Pool(name="a"),))


@SETTINGS
@given(fleets(), workloads(spans=(1,)), hints_strategy, st.integers(1, 20))
def test_placing_many_replicas_fast_gives_exactly_the_explained_order(
    state: ClusterState, workload: Workload, hints: PlacementHints, replicas: int
) -> None:
    explained = explain_placement(workload, state, hints, replicas=replicas, catalog=CATALOG)
    assert pick_nodes(workload, state, replicas, hints, catalog=CATALOG) == list(
        explained.candidates
    )
