"""Shared cards are counted physically; the scheduler's double count is an anomaly, not 'full'."""

from __future__ import annotations

from tests.placement.world import GIB, fresh, homelab, rebuild, with_node, workload
from tools.model import Gpu, SchedulerView, Sharing
from tools.placement import PlacementHints, node_capacity, pick_node, sharing_anomalies


def test_the_seeds_mps_double_count_is_a_typed_anomaly_with_its_fix() -> None:
    state = homelab(double_count=True)
    [anomaly] = [a for a in sharing_anomalies(state) if a.node == "ws-1"]
    assert anomaly.kind == "mps_double_count"
    assert anomaly.severity == "critical"
    assert (anomaly.scheduler_allocated, anomaly.scheduler_allocatable) == (2, 1)
    assert anomaly.physical_cards == 1
    assert anomaly.clients == ("tts/0", "worker/0")
    assert "used 2 / capacity 1" in anomaly.summary
    assert "refuses every further pod" in anomaly.explanation
    assert "name: nvidia.com/gpu, replicas: 2" in anomaly.fix
    assert "renameByDefault" in anomaly.fix


def test_a_correctly_advertised_mps_card_is_no_anomaly() -> None:
    assert [a for a in sharing_anomalies(homelab()) if a.node == "ws-1"] == []


def test_the_double_counted_node_is_not_full() -> None:
    state = homelab(double_count=True)
    cap = node_capacity(state)["ws-1"]
    assert cap.schedulable
    [gpu] = cap.cards
    assert gpu.sharing == "mps"
    assert gpu.clients == ("tts/0", "worker/0")
    assert gpu.slots == 2 and gpu.free_slots == 0  # two real clients, counted once each
    assert cap.memory_free_bytes == 242 * GIB
    # A pod that wants no GPU still belongs on ws-1, whatever the scheduler's count says.
    sidecar = workload("metrics", "batch", "workstation", 0, cards_per_replica=0)
    state = rebuild(state, workloads=(*state.workloads, sidecar))
    [candidate] = pick_node(sidecar, state)
    assert candidate.nodes == ("ws-1",)
    assert any("mps_double_count" in r for r in candidate.reasons)


def test_an_mps_slot_takes_its_clients_memory_limit_into_account() -> None:
    state = homelab()
    state = with_node(
        state,
        "ws-1",
        gpus=(
            Gpu(
                uuid="GPU-ws-1-0", index=0, model="RTX PRO 6000 Blackwell", node="ws-1",
                memory_total_bytes=fresh(96 * GIB), memory_used_bytes=fresh(10 * GIB),
                sharing=Sharing(mode="mps", replicas=3, mps_memory_limit_bytes=32 * GIB,
                                mps_active_thread_percentage=33),
                clients=("tts/0",),
            ),
        ),
    )  # fmt: skip
    worker = state.workload("worker")
    assert worker is not None
    [ok] = pick_node(worker, state)
    assert any("client memory limit 32.0 GiB, 33% compute" in r for r in ok.reasons)
    too_big = worker.model_copy(update={"model": "qwen3-32b", "context_length": 32_768})
    assert pick_node(too_big, state) == []


def test_time_slicing_offers_its_replicas_and_mig_its_slices() -> None:
    state = with_node(
        homelab(),
        "render-1",
        gpus=(
            Gpu(uuid="ts", index=0, model="H100", node="render-1",
                sharing=Sharing(mode="time-slicing", replicas=4), clients=("a/0",)),
            Gpu(uuid="mig", index=1, model="H100", node="render-1",
                sharing=Sharing(mode="mig", replicas=7, mig_profile="1g.10gb"),
                clients=("b/0", "b/1")),
        ),
    )  # fmt: skip
    cap = node_capacity(state)["render-1"]
    ts, mig = cap.cards
    assert (ts.slots, ts.free_slots) == (4, 3)
    assert (mig.slots, mig.free_slots, mig.client_memory_limit_bytes) == (7, 5, 10 * 10**9)
    assert cap.free_slots == 8
    assert cap.free_cards == 0
    # Memory missing on the cards: the catalogue's figure for the model is used, and said.
    assert ts.memory_total_bytes == 80 * GIB
    assert any("memory.total missing" in note for note in cap.notes)
    # An inference replica takes a MIG slice (not a time-sliced card), within the slice's memory.
    burst = state.workload("burst-llm")
    assert burst is not None
    assert pick_node(burst, state) == []  # qwen3-32b at 32k needs 43 GiB, a slice holds 10 GB
    [slice_] = pick_node(burst, state, PlacementHints(memory_bytes=8 * 10**9))
    assert slice_.gpus == ("mig",)
    assert any("a free MIG slice 1g.10gb" in r for r in slice_.reasons)


def test_an_exclusive_card_with_two_clients_is_oversubscribed() -> None:
    state = with_node(
        homelab(),
        "render-1",
        gpus=(
            Gpu(uuid="x", index=0, model="RTX PRO 6000 Blackwell", node="render-1",
                clients=("render/0", "burst-llm/0")),
        ),
    )  # fmt: skip
    kinds = {(a.node, a.kind) for a in sharing_anomalies(state)}
    assert ("render-1", "card_oversubscribed") in kinds
    assert node_capacity(state)["render-1"].free_slots == 0


def test_mps_limits_that_promise_more_than_the_card_are_flagged() -> None:
    state = with_node(
        homelab(),
        "ws-1",
        gpus=(
            Gpu(uuid="m", index=0, model="RTX PRO 6000 Blackwell", node="ws-1",
                memory_total_bytes=fresh(96 * GIB),
                sharing=Sharing(mode="mps", replicas=4, mps_memory_limit_bytes=32 * GIB),
                clients=("tts/0",)),
        ),
    )  # fmt: skip
    [anomaly] = [a for a in sharing_anomalies(state) if a.kind == "mps_memory_overcommitted"]
    assert anomaly.severity == "warning"
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" in anomaly.fix


def test_unified_memory_without_nvml_figures_falls_back_to_the_host_and_says_so() -> None:
    state = homelab(mode="cluster")  # host memory not measured in this state
    cap = node_capacity(state)["gx10-a"]
    assert cap.unified_memory
    [gb10] = cap.cards
    assert gb10.memory_total_bytes is None
    assert gb10.memory_source == "host (unified memory)"
    assert any("NVML memory figures missing" in n for n in cap.notes)
    # OS reserve (8 GiB) + glm-5.3-flash's share at 1M context in TP=2.
    assert "OS reserve" in cap.memory_source
    assert 100 * GIB < cap.memory_used_bytes < 128 * GIB


def test_a_scheduler_count_that_no_sharing_explains_is_reported_as_such() -> None:
    state = with_node(
        homelab(), "render-1", scheduler=SchedulerView(gpu_allocatable=2, gpu_allocated=3)
    )
    [anomaly] = [a for a in sharing_anomalies(state) if a.node == "render-1"]
    assert anomaly.kind == "scheduler_overcount"
    assert "Terminating" in anomaly.fix
