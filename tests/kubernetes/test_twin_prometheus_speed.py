"""`steward twin --speed 10`, as docs/kubernetes.md starts it, scraped by a real Prometheus with
docs/metrics.md's scrape configuration and its default storage: every sample is kept (none out
of bounds, as when the exporters stamped the simulated day, months before the wall clock), and
the cards, engines and job queues can be queried at the wall clock's now."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from lab.bench.prometheus_server import RealPrometheus
from tests.kubernetes.test_default_day_prometheus import twin_jobs
from tests.kubernetes.test_run_prometheus_process import first_line, steward

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DROPPED = re.compile(
    r"^prometheus_target_scrapes_sample_(out_of_bounds|out_of_order|duplicate_timestamp)_total"
    r" (\S+)$",
    re.MULTILINE,
)


def _query(prometheus: str, promql: str) -> list[dict[str, object]]:
    answer = httpx.get(
        f"{prometheus}/api/v1/query",
        params={"query": promql, "time": f"{time.time():.3f}"},
        timeout=5,
    ).json()
    assert answer["status"] == "success", answer
    result: list[dict[str, object]] = answer["data"]["result"]
    return result


def test_prometheus_keeps_every_sample_of_a_twin_at_ten_times_real_time(tmp_path: Path) -> None:
    with steward(
        ["twin", "--speed", "10", "--data-dir", str(tmp_path / "twin")],
        tmp_path / "twin.log",
        stdout=subprocess.PIPE,
    ) as twin:
        url = first_line(twin, tmp_path / "twin.log")
        target = url.removeprefix("http://")
        prometheus = RealPrometheus(tmp_path, [], interval="1s", jobs=twin_jobs(target, "1s"))
        prometheus.start()
        try:
            prometheus.wait_until_up(3)
            prometheus.wait_for_scrapes(3)
            cards = httpx.get(f"{url}/twin/exporters/dcgm/metrics", timeout=5).text
            served = len(re.findall(r"^DCGM_FI_DEV_GPU_UTIL\{", cards, re.MULTILINE))
            assert served >= 4, cards[:500]
            assert len(_query(prometheus.url, "DCGM_FI_DEV_GPU_UTIL")) == served
            engines = _query(prometheus.url, '{__name__=~"vllm[:_]num_requests_waiting"}')
            assert engines, "no engine series kept"
            assert _query(prometheus.url, "kueue_local_queue_pending_workloads")
            own = httpx.get(f"{prometheus.url}/metrics", timeout=5).text
            dropped = {name: float(value) for name, value in DROPPED.findall(own)}
            assert set(dropped) == {"out_of_bounds", "out_of_order", "duplicate_timestamp"}, own
            assert dropped == dict.fromkeys(dropped, 0.0)
        finally:
            prometheus.kill()
