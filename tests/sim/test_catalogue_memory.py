"""One source of truth for model memory: the simulator's served models take their weights, KV
bytes per token and overheads from the placement catalogue, so `steward fit`, the simulator's
memory refusals and the rotation preflight agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from lab.sim.profiles import GIB, catalogued, homelab
from tools.placement.catalog import default_catalog, load_catalog
from tools.placement.memoryfit import fit, memory_need

SERVED = {"resident-a": "split", "resident-b": "split", "beast": "cluster", "burst-llm": "split"}


@pytest.mark.parametrize("name", sorted(SERVED))
def test_the_sim_reads_each_served_model_from_the_catalogue(name: str) -> None:
    spec = homelab().workload(name)
    assert spec is not None and spec.serving is not None and spec.model is not None
    model = default_catalog().model(spec.model)
    ranks = spec.cards_per_replica
    assert spec.weights_bytes == model.weight_bytes
    assert spec.serving.kv_bytes_per_token == round(model.kv_bytes_per_token(ranks) * ranks)
    context = spec.context_length or model.max_context
    need = memory_need(model, default_catalog(), context, tensor_parallel=ranks)
    assert need.total_bytes <= spec.memory_per_node_bytes  # its reservation holds its context
    # What the catalogue says of the model in its mode, `steward fit` says too.
    assert fit(spec.model, context, SERVED[name]).fits  # type: ignore[arg-type]


def test_the_cluster_model_weighs_what_the_catalogue_says_not_180_gib() -> None:
    beast = homelab().workload("beast")
    assert beast is not None
    # GLM-5.3-Flash: 240B parameters at 4.0 bpw = 120 GB = 111.8 GiB over the two GX10s.
    assert beast.weights_bytes / GIB == pytest.approx(111.76, abs=0.01)
    # And the seeds' 1,048,576 tokens of context fit in the pair's KV cache.
    assert beast.kv_capacity_tokens >= 1_048_576


def test_a_model_that_does_not_fit_its_reservation_is_refused_when_the_profile_is_built() -> None:
    beast = homelab().workload("beast")
    assert beast is not None
    alone = beast.model_copy(update={"cards_per_replica": 1, "nodes_per_replica": 1})
    # One GX10 holds GLM-5.3-Flash's weights with ~29k tokens, not 1M: fit and the sim agree.
    assert not fit("glm-5.3-flash", 1_048_576, "split").fits
    with pytest.raises(ValueError, match=r"beast reserves 118\.0 GiB per node.*glm-5\.3-flash"):
        catalogued(alone)


def test_a_users_catalogue_entry_is_what_the_sim_uses(tmp_path: Path) -> None:
    mine = tmp_path / "models.yaml"
    mine.write_text(
        "models:\n"
        "  qwen3-32b:\n"
        "    params_total_b: 32.8\n"
        "    bits_per_weight: 16\n"
        "    layers: 64\n"
        "    attention: gqa\n"
        "    kv_heads: 8\n"
        "    head_dim: 128\n"
        "    kv_dtype: bf16\n"
        "    max_context: 131072\n"
    )
    burst = homelab().workload("burst-llm")
    assert burst is not None
    bf16 = catalogued(burst, load_catalog(mine))
    assert bf16.weights_bytes == 2 * burst.weights_bytes  # 16 bpw instead of FP8's 8
    assert bf16.kv_capacity_tokens < burst.kv_capacity_tokens


def test_a_model_the_catalogue_lacks_keeps_the_profiles_figures() -> None:
    tts = homelab().workload("tts")
    assert tts is not None and tts.serving is not None
    assert catalogued(tts) == tts
    assert tts.weights_bytes == 4 * GIB and tts.serving.kv_bytes_per_token == 16 * 1024


def test_the_sims_memory_refusal_matches_the_pairs_exclusive_memory() -> None:
    # beast reserves 118 GiB on each GX10; a resident's 110 GiB cannot sit beside it.
    sim = SimCluster.homelab()
    refused = sim.scale("resident-a", 1)
    assert not refused.ok and "gx10-a" in refused.message
