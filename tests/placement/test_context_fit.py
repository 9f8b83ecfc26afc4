"""Memory fit: the seeds' contexts, from honest arithmetic over the catalogue."""

from __future__ import annotations

import pytest

from tools.errors import InvalidInput
from tools.placement import fit, load_catalog, memory_need, standard_context

GIB = 1024**3


@pytest.mark.parametrize(
    ("model", "largest", "running_at", "fraction"),
    [
        # The first post: "running with 65,536 tokens of context while they were capable of
        # 262,144 and 524,288 respectively. A quarter and an eighth of what was available."
        ("qwen3.5-122b-a10b", 262_144, 65_536, 4),
        ("deepseek-v4-flash", 524_288, 65_536, 8),
    ],
)
def test_one_gx10_holds_what_the_split_residents_were_capable_of(
    model: str, largest: int, running_at: int, fraction: int
) -> None:
    report = fit(model, running_at, "split")
    assert report.fits
    assert report.largest_context == largest
    assert report.largest_context // running_at == fraction
    assert fit(model, largest, "split").fits


def test_deepseek_is_bounded_by_memory_not_by_the_model_on_one_node() -> None:
    report = fit("deepseek-v4-flash", 1_048_576, "split")
    assert not report.fits
    assert report.model_max_context == 1_048_576
    assert 524_288 <= report.max_tokens_in_memory < 1_048_576
    assert "at most" in report.reasons[0]


def test_the_big_model_holds_a_million_tokens_only_in_cluster_mode() -> None:
    one = fit("glm-5.3-flash", 1_048_576, "split")
    two = fit("glm-5.3-flash", 1_048_576, "cluster")
    assert not one.fits
    assert one.largest_context < 65_536  # "no cabe en 128 GB con contexto útil"
    assert two.fits
    assert two.nodes == 2 and two.tensor_parallel == 2
    assert two.largest_context == 1_048_576


def test_hy3_fits_only_in_two_nodes() -> None:
    one = fit("hy3-295b", 4_096, "split")
    assert not one.fits
    assert one.largest_context == 0
    assert "weights and overhead alone" in one.reasons[0]
    two = fit("hy3-295b", 131_072, "cluster")
    assert two.fits
    # "ocho veces menos contexto" than DeepSeek's 1M in the same two machines.
    assert fit("deepseek-v4-flash", 1_048_576, "cluster").largest_context // 8 == (
        two.largest_context
    )


def test_weights_are_params_times_bits_over_eight_split_under_tp() -> None:
    catalog = load_catalog()
    spec = catalog.model("hy3-295b")
    assert spec.weight_bytes == round(295e9 * 4.5 / 8)
    one = memory_need(spec, catalog, 1)
    two = memory_need(spec, catalog, 1, tensor_parallel=2)
    assert two.weights_bytes * 2 == pytest.approx(one.weights_bytes, abs=1)


def test_gqa_kv_is_two_layers_heads_dim_bytes_tokens_and_splits_heads_under_tp() -> None:
    catalog = load_catalog()
    spec = catalog.model("qwen3-32b")  # 64 layers, 8 KV heads x 128, bf16
    need = memory_need(spec, catalog, 32_768)
    assert need.kv_cache_bytes == 2 * 64 * 8 * 128 * 2 * 32_768 == 8 * GIB
    assert memory_need(spec, catalog, 32_768, tensor_parallel=2).kv_cache_bytes == 4 * GIB
    assert memory_need(spec, catalog, 32_768, concurrency=4).kv_cache_bytes == 32 * GIB


def test_hybrid_models_cache_only_their_full_attention_layers() -> None:
    spec = load_catalog().model("qwen3.5-122b-a10b")  # 16 of 64 layers, 2 KV heads x 256
    assert spec.kv_bytes_per_token() == 2 * 16 * 2 * 256 * 2


def test_mla_latent_is_replicated_on_every_rank() -> None:
    spec = load_catalog().model("deepseek-v4-flash")  # 56 layers x (512 + 64) x bf16
    assert spec.kv_bytes_per_token() == 56 * (512 + 64) * 2
    assert spec.kv_bytes_per_token(2) == spec.kv_bytes_per_token(1)
    assert any("replicated" in note for note in fit("deepseek-v4-flash", 8192, "cluster").notes)


def test_unified_memory_counts_what_other_processes_use() -> None:
    assumed = fit("deepseek-v4-flash", 524_288, "split")
    assert assumed.budget_per_node.available_bytes == 120 * GIB
    assert "OS reserve" in assumed.budget_per_node.source
    busy = fit("deepseek-v4-flash", 524_288, "split", used_bytes=20 * GIB)
    assert busy.budget_per_node.available_bytes == 108 * GIB
    assert not busy.fits
    assert busy.largest_context == 262_144


def test_concurrency_shares_the_memory_among_sequences() -> None:
    single = fit("deepseek-v4-flash", 65_536, "split")
    four = fit("deepseek-v4-flash", 65_536, "split", concurrency=4)
    assert four.need_per_node.kv_cache_bytes == 4 * single.need_per_node.kv_cache_bytes
    assert four.max_tokens_in_memory == single.max_tokens_in_memory // 4


def test_a_context_beyond_the_model_maximum_does_not_fit() -> None:
    report = fit("qwen3.5-122b-a10b", 524_288, "split")
    assert not report.fits
    assert report.reasons == ("context 524,288 is beyond qwen3.5-122b-a10b's maximum of 262,144",)


@pytest.mark.parametrize(
    ("tokens", "model_max", "expected"),
    [(597_849, 1_048_576, 524_288), (2_000_000, 262_144, 262_144), (0, 131_072, 0), (1, 8, 1)],
)
def test_the_largest_context_is_the_model_maximum_or_a_power_of_two(
    tokens: int, model_max: int, expected: int
) -> None:
    assert standard_context(tokens, model_max) == expected


def test_bad_input_names_the_thing_and_the_fix() -> None:
    with pytest.raises(InvalidInput, match=r"model 'nope' is not in the catalogue.*known: "):
        fit("nope", 1024)
    with pytest.raises(InvalidInput, match="mode 'both'"):
        fit("qwen3-32b", 1024, "both")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="context"):
        fit("qwen3-32b", 0)
