"""`steward bench metrics` measures the join a user's Prometheus gives: a DCGM exporter per node
and every engine pod, each a scrape target of its own, so the readings carry one sample time per
node and per pod."""

from __future__ import annotations

import httpx
import pytest

from lab.bench.metrics import decoded_answers, per_pod, recorded_answers, run_bench
from lab.bench.policy_fleet import fleet_state
from tools.metrics.prometheus.source import Answer
from tools.metrics.prometheus.vector import Vector
from tools.metrics.serve import MetricsServer


def test_routes_serve_each_exporter_at_its_path() -> None:
    server = MetricsServer(routes={"/a/metrics": lambda: b"a 1\n", "/b/metrics": lambda: b"b 2\n"})
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert httpx.get(f"{base}/a/metrics").text == "a 1\n"
        assert httpx.get(f"{base}/b/metrics?x=1").text == "b 2\n"
        assert httpx.get(f"{base}/metrics").status_code == 404
        assert server.scrapes == 2
    finally:
        server.stop()


def test_a_server_serves_one_body_or_routes() -> None:
    with pytest.raises(ValueError, match="not both"):
        MetricsServer(lambda: b"", routes={"/metrics": lambda: b""})
    with pytest.raises(ValueError, match="needs a body or routes"):
        MetricsServer()


def test_engine_lines_split_into_each_pods_exposition() -> None:
    lines = [
        "# TYPE vllm:num_requests_waiting gauge",
        'vllm:num_requests_waiting{model_name="m",namespace="default",pod="a-0"} 1',
        'vllm:num_requests_waiting{model_name="m",namespace="default",pod="a-1"} 2',
        "# TYPE vllm:generation_tokens_total counter",
        'vllm:generation_tokens_total{model_name="m",namespace="default",pod="a-1"} 9',
    ]
    assert per_pod(lines) == {
        "a-0": [lines[0], lines[1]],
        "a-1": [lines[0], lines[2], lines[3], lines[4]],
    }
    with pytest.raises(ValueError, match="without a pod"):
        per_pod(["up 1"])


@pytest.mark.slow
def test_the_bench_scrapes_a_dcgm_exporter_per_node() -> None:
    figures = run_bench(nodes=6, runs=3)
    pods = sum(1 for w in fleet_state(6).workloads for r in w.placement if r.ready)
    assert figures.scrape_targets == 6 + pods  # an exporter per node, a target per engine pod
    assert figures.matched_cards == figures.cards == 48
    assert figures.matched_workloads == figures.workloads
    assert figures.card_sample_times > 1  # the targets were scraped at their own moments
    # The join a tick does: over the series Steward's recording rules record (the cards'; on
    # this 6-node fleet with a target per pod the workload rules were seen not to answer within
    # the bench's wait, and those families were joined from the raw series).
    assert {"gpu_util", "fb_used", "fb_free"} <= set(figures.from_rules)
    one = run_bench(nodes=6, runs=3, targets="one")
    assert one.scrape_targets == 2 and one.card_sample_times == 1
    assert one.matched_cards == 48


def test_each_join_gets_the_answers_decoded_afresh() -> None:
    """The same series and values, in new label sets and new strings: a tick's answers are new,
    their strings' hashes not worked out yet (joining one answer again and again hides that)."""
    answers: dict[str, Answer] = {
        "gpu_util": Vector(
            evaluated_at=1_700_000_000.5,
            series=[
                ({"UUID": "GPU-1", "steward_t": "1699999999.9"}, 42.0),
                ({"UUID": "GPU-2"}, 0.1),
            ],
        ),
        "waiting": "unreachable: Prometheus at http://x did not answer within 5 s",
    }
    again = decoded_answers(recorded_answers(answers))
    assert list(again) == ["gpu_util"]  # a family that failed has nothing to decode
    first, fresh = answers["gpu_util"], again["gpu_util"]
    assert isinstance(first, Vector) and isinstance(fresh, Vector)
    assert fresh == first
    assert fresh.series[0][0] is not first.series[0][0]
    assert fresh.series[0][0]["UUID"] is not first.series[0][0]["UUID"]
