"""The model catalogue: shipped with the package, extended by the user's own files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import InvalidInput
from tools.placement import CATALOG_ENV, fit, load_catalog

SEED_MODELS = {"deepseek-v4-flash", "qwen3.5-122b-a10b", "glm-5.3-flash", "hy3-295b", "qwen3-32b"}


def test_the_shipped_catalogue_holds_the_seeds_models_and_the_gx10() -> None:
    catalog = load_catalog()
    assert set(catalog.models) >= SEED_MODELS
    gx10 = catalog.host("gx10")
    assert gx10.unified_memory and gx10.memory_gib == 128
    assert catalog.default_host == "gx10"
    for spec in catalog.models.values():
        assert spec.description, f"{spec.name} documents its sources and assumptions"


def test_a_user_file_adds_and_overrides_models(tmp_path: Path) -> None:
    extra = tmp_path / "mine.yaml"
    extra.write_text(
        "models:\n"
        "  tiny-8b:\n"
        "    params_total_b: 8\n"
        "    bits_per_weight: 16\n"
        "    layers: 32\n"
        "    kv_heads: 8\n"
        "    head_dim: 128\n"
        "    max_context: 131072\n"
        "  qwen3-32b:\n"
        "    params_total_b: 32.8\n"
        "    bits_per_weight: 4.5\n"
        "    layers: 64\n"
        "    kv_heads: 8\n"
        "    head_dim: 128\n"
        "    max_context: 32768\n"
    )
    catalog = load_catalog(extra)
    assert catalog.model("tiny-8b").weight_bytes == 16 * 10**9
    assert catalog.model("qwen3-32b").max_context == 32_768
    assert catalog.sources[-1] == str(extra)
    assert fit("tiny-8b", 131_072, catalog=catalog).fits


def test_the_environment_names_extra_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = tmp_path / "env.yaml"
    extra.write_text("hosts:\n  big:\n    memory_gib: 512\n")
    monkeypatch.setenv(CATALOG_ENV, str(extra))
    assert load_catalog().host("big").memory_gib == 512


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("models: [1, 2]\n", "models must be a mapping"),
        ("modles: {}\n", "unknown top-level key"),
        ("models:\n  x:\n    params_total_b: -1\n", "models.x.params_total_b"),
        ("models:\n  x: {params_total_b: 1, bits_per_weight: 4, layers: 2, max_context: 8}\n",
         "a GQA model needs kv_heads"),
        ("models: {x: [}\n", r"bad\.yaml:1:"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_with_its_place(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(InvalidInput, match=message):
        load_catalog(bad)


def test_a_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=f"cannot read the model catalogue.*{CATALOG_ENV}"):
        load_catalog(tmp_path / "absent.yaml")
