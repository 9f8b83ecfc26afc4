"""The simulator reproduces the seeds' figures: split serves more in total, cluster streams faster.

Replaying the Azure conversation trace for ten simulated minutes on the homelab gives queue depth
and wait series; the modes' aggregate peaks (95.5 vs ~170 tok/s) and single-stream speeds
(40.9 vs 20.3 / 20.8 tok/s) hold.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from tests.sim.conftest import Mode, replay, steady

TEN_MINUTES = 600.0


def test_trace_replay_gives_queue_depth_and_wait_series(conv_trace: Path) -> None:
    sim = SimCluster.from_scenario(replay("split", conv_trace, rate_scale=0.5))
    sim.advance(TEN_MINUTES)
    points = sim.series().of("resident-a")
    assert len(points) == 60  # one every 10 s
    depths = [p.queue_depth for p in points]
    waits = [p.queue_wait_s for p in points if p.queue_wait_s is not None]
    assert max(depths) > 0, "half the real trace's rate overloads two GX10: a queue forms"
    assert depths[-1] > depths[5], "the queue grows while demand stays above capacity"
    assert max(waits) > 30
    assert all(w >= 0 for w in waits)
    assert all(p.ttft_s is None or p.ttft_s >= 0 for p in points)


def test_cluster_serves_less_in_aggregate_than_split(conv_trace: Path) -> None:
    served: dict[Mode, float] = {}
    runs: tuple[tuple[Mode, tuple[str, ...]], ...] = (
        ("cluster", ("beast",)),
        ("split", ("resident-a", "resident-b")),
    )
    for mode, names in runs:
        sim = SimCluster.from_scenario(replay(mode, conv_trace, rate_scale=0.5))
        sim.advance(TEN_MINUTES)
        served[mode] = sim.series().tokens_total(*names) / TEN_MINUTES
    # Long conversation prompts spend time in prefill, so neither reaches its decode peak, but
    # two brains still serve well over a third more than one spread over both machines.
    assert served["split"] > 1.3 * served["cluster"]
    assert served["cluster"] <= 95.5
    assert served["split"] <= 170.0


@pytest.mark.parametrize(
    ("mode", "names", "peak"),
    [("cluster", ("beast",), 95.5), ("split", ("resident-a", "resident-b"), 170.0)],
)
def test_aggregate_peak_holds_under_decode_heavy_load(
    mode: Mode, names: tuple[str, ...], peak: float
) -> None:
    # Short prompts, long answers, far more demand than capacity: decode runs near its peak,
    # never above it; the steps that prefill the requests taken in cost it a few per cent.
    sim = SimCluster.from_scenario(steady("gx10", 120, mode=mode, inp=50, out=400))
    sim.advance(120)
    before = sim.series().tokens_total(*names)
    sim.advance(180)
    rate = (sim.series().tokens_total(*names) - before) / 180
    assert 0.93 * peak <= rate <= peak


@pytest.mark.parametrize(
    ("mode", "workload", "single"),
    [("cluster", "beast", 40.9), ("split", "resident-a", 20.3), ("split", "resident-b", 20.8)],
)
def test_single_stream_speed(mode: Mode, workload: str, single: float) -> None:
    # One request at a time: nothing shares the replica, so it decodes at the single-stream speed.
    sim = SimCluster.from_scenario(steady(workload, 0.5, mode=mode, inp=200, out=300))
    sim.advance(1800)
    speeds = [p.stream_tok_s for p in sim.series().of(workload) if p.stream_tok_s is not None]
    assert speeds, "some requests completed"
    assert sum(speeds) / len(speeds) == pytest.approx(single, rel=0.02)
    assert sim.probe(workload).tokens_per_s == pytest.approx(single)
