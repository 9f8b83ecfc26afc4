"""Render jobs: a job queue per render workload, cards busy only while a job runs, jobs that wait
while the pool is at zero, queue metrics like a gateway's, the same run for the same seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sim.backend import SimCluster
from lab.sim.demand import (
    BurstArrivals,
    DiurnalArrivals,
    Generator,
    PoissonArrivals,
    RenderDemand,
)
from lab.sim.scenario import Scenario, load_scenario
from tools.errors import InvalidInput
from tools.model import ClusterState


def renders(replicas: int, arrivals: PoissonArrivals | BurstArrivals, seed: int = 5) -> Scenario:
    job = RenderDemand(target="render", gpu_s_per_job=60, arrivals=arrivals)
    return Scenario(seed=seed, replicas={"render": replicas, "burst-llm": 0}, demand=(job,))


def render_cards(state: ClusterState) -> list[float | None]:
    node = state.node("render-1")
    assert node is not None
    return [g.utilization.value for g in node.gpus]


def test_an_idle_render_replica_leaves_its_cards_idle() -> None:
    sim = SimCluster.from_scenario(renders(1, PoissonArrivals(rate_per_min=0)))
    sim.advance(120)
    state = sim.observe()
    render = state.workload("render")
    assert render is not None and render.ready_replicas == 1
    assert render_cards(state) == [0.0, 0.0]
    assert render.queue_depth.value == 0 and render.queue_depth.status == "fresh"
    assert render.queue_wait_s.value == 0
    assert render.tokens_per_s.status == "missing"  # a render job makes no tokens


def test_a_running_job_keeps_both_cards_busy() -> None:
    sim = SimCluster.from_scenario(renders(1, BurstArrivals(rate_per_min=6, at_s=0, duration_s=60)))
    sim.advance(90)
    assert all(u is not None and u > 0.9 for u in render_cards(sim.observe()))


def test_jobs_wait_at_zero_and_run_when_a_replica_comes() -> None:
    burst = BurstArrivals(rate_per_min=4, at_s=0, duration_s=60)
    sim = SimCluster.from_scenario(renders(0, burst))
    sim.advance(120)
    state = sim.observe()
    render = state.workload("render")
    assert render is not None
    waiting = render.queue_depth.value
    assert waiting is not None and waiting >= 2
    assert render.queue_wait_s.value is not None and render.queue_wait_s.value > 55
    assert render_cards(state) == [0.0, 0.0]
    assert sim.scale("render", 1).ok
    sim.advance(15 + 60 * waiting * 3)  # load, then the jobs one after another (mean 60 s)
    render = sim.observe().workload("render")
    assert render is not None and render.queue_depth.value == 0
    done = sum(p.completed for p in sim.series("render").points)
    assert done == waiting


def test_utilization_follows_the_jobs_in_the_series() -> None:
    sim = SimCluster.from_scenario(
        renders(1, BurstArrivals(rate_per_min=2, at_s=300, duration_s=60))
    )
    sim.advance(900)
    points = sim.series("render").points
    before = [p.utilization for p in points if p.elapsed_s <= 300]
    assert before and max(before) == 0.0
    assert max(p.utilization for p in points) > 0.9


def test_the_same_seed_gives_the_same_jobs_and_a_saved_cluster_goes_on_the_same(
    tmp_path: Path,
) -> None:
    scenario = renders(1, PoissonArrivals(rate_per_min=1.5), seed=11)
    a = SimCluster.from_scenario(scenario)
    b = SimCluster.open(tmp_path, scenario)
    a.advance(400)
    b.advance(400)
    b.save()
    b = SimCluster.open(tmp_path)  # mid-job: the running job lives in the saved replica
    a.advance(800)
    b.advance(800)
    assert a.observe() == b.observe()
    assert a.series("render") == b.series("render")
    other = SimCluster.from_scenario(renders(1, PoissonArrivals(rate_per_min=1.5), seed=12))
    other.advance(1200)
    assert other.series("render") != a.series("render")


@pytest.mark.parametrize(
    "arrivals",
    [
        PoissonArrivals(rate_per_min=3),
        BurstArrivals(rate_per_min=3, at_s=0, duration_s=3600),
        DiurnalArrivals(min_rate_per_min=3, max_rate_per_min=3),
    ],
)
def test_every_arrival_shape_draws_jobs_of_the_mean_size(
    arrivals: PoissonArrivals | BurstArrivals | DiurnalArrivals,
) -> None:
    spec = RenderDemand(target="render", gpu_s_per_job=90, arrivals=arrivals)
    gen = Generator(spec, 3, Scenario().start)
    jobs = [j for t in range(0, 3600, 5) for j in gen.window(t, t + 5)]  # ticks, not a cohort
    assert 130 <= len(jobs) <= 230  # 180 expected
    assert all(j.input_tokens == 0 and j.output_tokens == 0 and j.work_s > 0 for j in jobs)
    mean = sum(j.work_s for j in jobs) / len(jobs)
    assert 75 <= mean <= 105


def test_render_jobs_and_requests_go_to_their_own_kind(tmp_path: Path) -> None:
    path = tmp_path / "wrong.yaml"
    path.write_text(
        "name: wrong\n"
        "demand:\n"
        "  - kind: render\n"
        "    target: burst-llm\n"
        "    gpu_s_per_job: 60\n"
        "    arrivals: {kind: poisson, rate_per_min: 1}\n"
        "  - kind: poisson\n"
        "    target: render\n"
        "    rate_per_min: 1\n"
    )
    with pytest.raises(InvalidInput) as caught:
        load_scenario(path)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith(f"{path}:4:5: demand[0].target: 'burst-llm' is not a render")
    assert lines[1].startswith(f"{path}:8:5: demand[1].target: 'render' runs render jobs")


def test_a_diurnal_render_demand_with_its_rates_upside_down_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "upside-down.yaml"
    path.write_text(
        "demand:\n"
        "  - kind: render\n"
        "    target: render\n"
        "    gpu_s_per_job: 60\n"
        "    arrivals:\n"
        "      kind: diurnal\n"
        "      min_rate_per_min: 5\n"
        "      max_rate_per_min: 1\n"
    )
    with pytest.raises(InvalidInput, match=r":7:7: demand\[0\]\.arrivals\.min_rate_per_min"):
        load_scenario(path)
