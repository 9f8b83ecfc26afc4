"""Fitting on live nodes: unified memory counts what the host uses, NVML gaps are said."""

from __future__ import annotations

import pytest

from tests.placement.world import GIB, fresh, gx10, homelab, idle_gx10_pair
from tools.errors import InvalidInput
from tools.model import Metric
from tools.placement import fit, load_catalog, node_budget


def test_a_measured_gx10_offers_its_memory_less_what_the_host_uses() -> None:
    state = idle_gx10_pair()  # 6 GiB in use on each, measured
    node = state.node("gx10-a")
    assert node is not None
    budget, notes = node_budget(node, load_catalog())
    assert budget.available_bytes == 122 * GIB
    assert "(measured)" in budget.source
    assert any("NVML memory figures missing on GB10" in n for n in notes)
    report = fit("deepseek-v4-flash", 65_536, "split", nodes=[node])
    assert report.fits and report.largest_context == 524_288
    assert report.host == "gx10-a"


def test_an_unmeasured_gx10_keeps_the_os_reserve_and_says_so() -> None:
    node = gx10("gx10-a")  # host memory in use missing
    report = fit("qwen3.5-122b-a10b", 262_144, "split", nodes=[node])
    assert report.budget_per_node.available_bytes == 120 * GIB
    assert any("host memory in use missing: 8.0 GiB OS reserve assumed" in n for n in report.notes)


def test_a_busy_host_leaves_less_context() -> None:
    node = gx10("gx10-a", used_gib=20.0)
    report = fit("deepseek-v4-flash", 524_288, "split", nodes=[node])
    assert not report.fits
    assert report.largest_context == 262_144


def test_cluster_mode_is_bound_by_the_tighter_node() -> None:
    roomy, tight = gx10("gx10-a", used_gib=6.0), gx10("gx10-b", used_gib=60.0)
    report = fit("glm-5.3-flash", 1_048_576, "cluster", nodes=[roomy, tight])
    assert not report.fits
    assert report.budget_per_node.source.startswith("gx10-b")
    assert report.host == "gx10-a + gx10-b"
    with pytest.raises(InvalidInput, match="needs 2 node"):
        fit("glm-5.3-flash", 1_048_576, "cluster", nodes=[roomy])


def test_a_discrete_node_offers_its_freest_card() -> None:
    render = homelab().node("render-1")
    assert render is not None
    report = fit("qwen3-32b", 131_072, "split", nodes=[render])
    assert report.fits
    assert report.budget_per_node.available_bytes == 96 * GIB
    assert "from NVML" in report.budget_per_node.source
    blind = render.model_copy(
        update={
            "gpus": tuple(
                g.model_copy(update={"memory_total_bytes": Metric.missing()}) for g in render.gpus
            )
        }
    )
    budget, _ = node_budget(blind, load_catalog())
    assert "catalogue (NVML missing)" in budget.source
    unknown = render.model_copy(
        update={
            "gpus": tuple(
                g.model_copy(update={"model": "X1", "memory_total_bytes": Metric.missing()})
                for g in render.gpus
            ),
            "memory_used_bytes": fresh(0),
        }
    )
    with pytest.raises(InvalidInput, match="no card with known memory"):
        node_budget(unknown, load_catalog())
