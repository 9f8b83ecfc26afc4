"""Picking nodes: what is excluded and why, what ranks first and why, pairs for TP groups."""

from __future__ import annotations

import pytest

from tests.placement.world import BLACKWELL, GIB, homelab, idle_gx10_pair, rebuild, with_node
from tools.errors import InvalidInput
from tools.model import ClusterState, Taint, Workload
from tools.placement import PlacementHints, explain_placement, pick_node, pick_nodes


def _workload(state: object, name: str) -> Workload:
    found = state.workload(name)  # type: ignore[attr-defined]
    assert isinstance(found, Workload)
    return found


def test_burst_llm_borrows_a_render_card_while_nobody_renders() -> None:
    state = homelab()
    [best] = pick_node(_workload(state, "burst-llm"), state)
    assert best.nodes == ("render-1",)
    assert best.gpus == ("GPU-render-1-0",)
    assert best.memory_free_after_bytes is not None
    assert 50 * GIB < best.memory_free_after_bytes < 96 * GIB
    assert any("whole card" in r for r in best.reasons)
    first, second = pick_nodes(_workload(state, "burst-llm"), state, 3)
    assert (first.gpus, second.gpus) == (("GPU-render-1-0",), ("GPU-render-1-1",))


def test_while_rendering_the_cards_are_taken_and_the_rejection_says_by_whom() -> None:
    state = homelab(render_busy=True)
    placement = explain_placement(_workload(state, "burst-llm"), state)
    assert placement.candidates == ()
    render = next(r for r in placement.rejected if r.nodes == ("render-1",))
    assert "no free slot (used by render/0)" in render.reasons[0]
    gx10 = next(r for r in placement.rejected if r.nodes == ("gx10-a",))
    assert "node selector" in gx10.reasons[0]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"cordoned": True}, "cordoned"),
        ({"ready": False}, "not ready"),
        ({"taints": (Taint(key="gpu-maintenance"),)}, "tainted gpu-maintenance=:NoSchedule"),
    ],
)
def test_cordoned_unready_and_tainted_nodes_are_rejected_with_the_reason(
    changes: dict[str, object], reason: str
) -> None:
    state = with_node(homelab(), "render-1", **changes)
    placement = explain_placement(_workload(state, "burst-llm"), state)
    assert placement.candidates == ()
    [rejection] = [r for r in placement.rejected if r.nodes == ("render-1",)]
    assert reason in rejection.reasons


def test_a_tolerated_taint_lets_the_replica_in_but_a_cordon_never_does() -> None:
    tainted = with_node(homelab(), "render-1", taints=(Taint(key="gpu-maintenance"),))
    hints = PlacementHints(tolerations=("gpu-maintenance",))
    assert pick_node(_workload(tainted, "burst-llm"), tainted, hints)
    cordoned = with_node(tainted, "render-1", cordoned=True)
    assert pick_node(_workload(cordoned, "burst-llm"), cordoned, hints) == []


def test_the_big_model_takes_the_linked_gx10_pair_with_the_link_in_its_reasons() -> None:
    state = idle_gx10_pair()
    [pair] = pick_node(_workload(state, "beast"), state)
    assert pair.nodes == ("gx10-a", "gx10-b")
    assert pair.link == "gx10-link"
    assert pair.gpus == ("GPU-gx10-a", "GPU-gx10-b")
    assert any("rail-0 98.0/200 Gb/s" in r for r in pair.reasons)
    assert any("unified memory free after the fit" in r for r in pair.reasons)


def test_the_big_model_does_not_fit_while_the_residents_hold_the_pair() -> None:
    state = homelab(mode="split")
    placement = explain_placement(_workload(state, "beast"), state)
    assert placement.candidates == ()
    [pair] = [r for r in placement.rejected if r.nodes == ("gx10-a", "gx10-b")]
    assert any("gx10-a: needs 1 card slot(s)" in r for r in pair.reasons)


@pytest.mark.parametrize(
    ("link", "reason"),
    [
        ({"link_gbps": 22.0}, "at 11% of nominal"),  # the link after a pending reboot
        ({"gid_index": 5}, "GID index 5, NCCL_IB_GID_INDEX expects 3"),
    ],
)
def test_a_degraded_link_rules_out_the_tp_pair(link: dict[str, float], reason: str) -> None:
    state = homelab(mode="split", **link)  # type: ignore[arg-type]
    state = rebuild(
        state,
        links=state.links,
        nodes=idle_gx10_pair().nodes,
        workloads=idle_gx10_pair().workloads,
    )
    placement = explain_placement(_workload(state, "beast"), state)
    assert placement.candidates == ()
    [pair] = [r for r in placement.rejected if r.nodes == ("gx10-a", "gx10-b")]
    assert reason in pair.reasons[0]


def test_nodes_without_a_link_cannot_host_a_tp_group() -> None:
    state = rebuild(idle_gx10_pair(), links=())
    placement = explain_placement(_workload(state, "beast"), state)
    assert placement.candidates == ()
    assert all("not linked" in r.reasons[0] for r in placement.rejected)


def test_unified_memory_in_use_by_other_processes_keeps_a_model_out() -> None:
    state = idle_gx10_pair()
    resident = _workload(state, "resident-a")
    assert [c.node for c in pick_node(resident, state)] == ["gx10-a", "gx10-b"]
    busy = idle_gx10_pair(memory_used_bytes=state.nodes[0].memory_used_bytes.but(value=60.0 * GIB))
    placement = explain_placement(resident, busy)
    assert placement.candidates == ()
    assert "of unified memory" in placement.rejected[0].reasons[0]
    assert "measured" in placement.rejected[0].reasons[0]


def _two_render_boxes() -> ClusterState:
    """render-1 with both cards free, render-2 with one of two busy; burst may use either."""
    state = homelab()
    render1 = state.node("render-1")
    assert render1 is not None
    render2 = render1.model_copy(
        update={
            "name": "render-2",
            "gpus": (
                render1.gpus[0].model_copy(update={"uuid": "GPU-render-2-0", "node": "render-2"}),
                render1.gpus[1].model_copy(
                    update={"uuid": "GPU-render-2-1", "node": "render-2", "clients": ("x/0",)}
                ),
            ),
        }
    )
    pools = tuple(
        p.model_copy(update={"node_selector": {"steward.dev/group": "render"}})
        if p.name == "burst"
        else p
        for p in state.pools
    )
    return rebuild(state, nodes=(*state.nodes, render2), pools=pools)


def test_spread_takes_the_emptiest_node_and_pack_the_fullest() -> None:
    state = _two_render_boxes()
    burst = _workload(state, "burst-llm")
    spread = pick_node(burst, state, PlacementHints(strategy="spread"))
    pack = pick_node(burst, state, PlacementHints(strategy="pack"))
    assert [c.node for c in spread] == ["render-1", "render-2"]
    assert [c.node for c in pack] == ["render-2", "render-1"]
    # Spreading three replicas: one each first, then the only card left.
    placed = pick_nodes(burst, state, 3)
    assert [c.node for c in placed] == ["render-1", "render-2", "render-1"]
    assert len({g for c in placed for g in c.gpus}) == 3


def test_spread_prefers_the_node_with_fewer_replicas_and_pack_the_fuller_one() -> None:
    state = idle_gx10_pair()
    small = _workload(state, "burst-llm").model_copy(
        update={"pool": "gx10", "model": "qwen3-32b", "context_length": 8192}
    )
    state = rebuild(state, links=())
    assert [c.node for c in pick_nodes(small, state, 2)] == ["gx10-a", "gx10-b"]
    # Each GB10 offers one slot: the second replica goes to the other node either way.
    packed = pick_nodes(small, state, 2, PlacementHints(strategy="pack"))
    assert [c.node for c in packed] == ["gx10-a", "gx10-b"]
    assert len(pick_nodes(small, state, 5)) == 2


def test_gpu_model_preference_ranks_before_the_name() -> None:
    state = with_node(
        homelab(),
        "render-1",
        gpus=(
            homelab().nodes[3].gpus[0],
            homelab().nodes[3].gpus[1].model_copy(update={"model": "H200"}),
        ),
    )
    burst = _workload(state, "burst-llm")
    default = pick_node(burst, state)
    preferred = pick_node(burst, state, PlacementHints(prefer_gpu_models=("H200", BLACKWELL)))
    assert default[0].gpus == ("GPU-render-1-0",)
    assert preferred[0].gpus == ("GPU-render-1-1",)
    assert any("preferred GPU model H200 (#1)" in r for r in preferred[0].reasons)


def test_soft_taints_rank_lower_and_ties_break_by_name() -> None:
    state = rebuild(idle_gx10_pair(), links=())
    resident = _workload(state, "resident-b")
    assert [c.node for c in pick_node(resident, state)] == ["gx10-a", "gx10-b"]
    soft = with_node(state, "gx10-a", taints=(Taint(key="spot", effect="PreferNoSchedule"),))
    ranked = pick_node(resident, soft)
    assert [c.node for c in ranked] == ["gx10-b", "gx10-a"]
    assert any("PreferNoSchedule taint spot=: ranked lower" in r for r in ranked[1].reasons)


def test_a_tp_replica_whose_cards_do_not_divide_among_its_nodes_is_bad_input() -> None:
    state = idle_gx10_pair()
    odd = _workload(state, "beast").model_copy(update={"cards_per_replica": 3})
    with pytest.raises(InvalidInput, match="not a multiple of nodes_per_replica"):
        pick_node(odd, state)


def test_the_ranking_is_deterministic() -> None:
    state = homelab()
    burst = _workload(state, "burst-llm")
    assert pick_node(burst, state) == pick_node(burst, homelab())


def test_a_limit_keeps_the_head_of_the_same_ranking() -> None:
    state = _two_render_boxes()
    burst = _workload(state, "burst-llm")
    assert pick_node(burst, state, limit=1) == pick_node(burst, state)[:1]
