"""Each controller family on short slices of real and synthetic traces, through the real sim."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.conftest import job_csv, prepared, request_csv, run

HOMELAB_CARDS = 2  # burst-llm's pool: policies/default.yaml max_cards


def test_every_family_replays_a_slice_of_the_conversation_trace() -> None:
    prep = prepared("azure-conv", 600)
    for name in ("static", "keda", "hpa", "dynamo", "rayserve", "aibrix", "steward"):
        f = run(prep, name).figures
        assert 0.0 <= f.slo_attainment <= 1.0, name
        assert 0.0 < f.gpu_hours <= HOMELAB_CARDS * 600 / 3600 + 1e-9, name
        assert 0.0 <= f.idle_gpu_hours <= f.gpu_hours, name
        assert f.energy_kwh > 0, name
        assert f.ttft_p50_s is not None and f.ttft_p50_s <= (f.ttft_p99_s or 0), name
        assert f.rejected == 0 and f.median_ms > 0, name


def test_static_holds_its_peak_count_and_never_scales() -> None:
    f = run(prepared("azure-conv", 600), "static").figures
    assert f.scaling_actions == 0
    assert f.gpu_hours == pytest.approx(HOMELAB_CARDS * 600 / 3600, abs=1e-3)


def test_keda_goes_to_zero_after_its_cooldown_and_back_on_the_next_request(tmp_path: Path) -> None:
    # Requests for a minute, ten quiet minutes (cooldown 300 s: KEDA scales to zero), then more.
    rows = [(s * 2.0, 800, 120) for s in range(30)] + [(660 + s * 2.0, 800, 120) for s in range(30)]
    rows.append((1300.0, 800, 120))  # after the end: no loop
    prep = prepared(str(request_csv(tmp_path / "gap.csv", rows)), 1200, rate_scale=1.0)
    f = run(prep, "keda", "threshold=1").figures
    assert f.scaling_actions >= 2  # down to zero, then back up
    assert f.dropped == 0
    assert f.from_zero_wait_p99_s is not None
    # Woken within one polling interval (30 s), then burst-llm loads its model (90 s).
    assert f.from_zero_wait_p99_s <= 90 + 30 + 10


def test_hpa_never_goes_below_one_replica(tmp_path: Path) -> None:
    rows = [(s * 2.0, 800, 120) for s in range(30)] + [(900.0, 800, 120), (1000.0, 800, 120)]
    prep = prepared(str(request_csv(tmp_path / "gap.csv", rows)), 960, rate_scale=1.0)
    out = run(prep, "hpa")
    assert min(out.series.cards) >= 1
    assert out.figures.from_zero_wait_p99_s is None


def test_a_request_no_model_can_hold_is_rejected_under_every_controller(tmp_path: Path) -> None:
    # burst-llm holds 32,768 tokens of context: a 40,000-token prompt cannot be served.
    # (A last row after the run's end keeps the short trace from being replayed in a loop.)
    rows = [(1.0, 40_000, 100), (2.0, 500, 50), (3.0, 600, 60), (400.0, 500, 50)]
    prep = prepared(str(request_csv(tmp_path / "long.csv", rows)), 300, rate_scale=1.0)
    for name in ("keda", "static"):
        f = run(prep, name).figures
        assert f.rejected == 1, name
        assert f.dropped == 0, name


def test_a_render_job_trace_runs_on_the_render_pool(tmp_path: Path) -> None:
    rows = [(s * 20.0, 30.0) for s in range(15)]
    prep = prepared(str(job_csv(tmp_path / "jobs.csv", rows)), 600, rate_scale=1.0)
    assert [t.name for t in prep.targets] == ["render"]
    f = run(prep, "keda", "threshold=1").figures
    assert f.dropped == 0
    assert f.gpu_hours > 0
    assert f.slo_attainment <= 1.0


def test_dynamo_sizes_from_the_frontend_rate_without_seeing_the_queue() -> None:
    # The sinusoid at full scale: Dynamo's 180 s interval lags the 900 s swing.
    prep = prepared("sinusoid", 900, rate_scale=0.05)
    out = run(prep, "dynamo", "mode=throughput capacity_share=0.8")
    assert out.figures.scaling_actions >= 1
    assert len(set(out.series.cards)) >= 2


def test_the_fleet_drives_two_pools_of_several_workloads() -> None:
    prep = prepared("sinusoid", 300, fleet=(8, 8))
    assert {t.pool for t in prep.targets} == {"llm-small", "llm-mid"}
    f = run(prep, "hpa").figures
    assert f.gpu_hours > 0
    assert 0.0 <= f.slo_attainment <= 1.0
