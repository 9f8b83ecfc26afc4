"""`steward gpus --serve` is an exporter a real Prometheus scrapes: NVML's readings (the recorded
H200 standing in for a card) under DCGM's names, joined back to the card they came from."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from pydantic import TypeAdapter

from lab.bench.prometheus_server import RealPrometheus, free_port
from tools.metrics.exposition import card_lines
from tools.metrics.nvml.readings import HostMemory, Snapshot
from tools.metrics.nvml.source import host_state
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.model import ClusterState, Gpu, Node

FIXTURE = Path(__file__).parent.parent / "fixtures" / "nvml" / "h200-recorded.json"
RECORDED = TypeAdapter(list[Snapshot]).validate_json(FIXTURE.read_bytes())
UUID = RECORDED[0].devices[0].uuid
ROOT = Path(__file__).parent.parent.parent


@pytest.fixture
def exporter() -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", "gpus", "--serve", str(port), "--replay", str(FIXTURE)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=1)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"gpus --serve did not start: {proc.stderr}") from None
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_exporter_answers_in_the_text_format(exporter: int) -> None:
    answer = httpx.get(f"http://127.0.0.1:{exporter}/metrics", timeout=5)
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = [line for line in answer.text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    assert len(lines) == 1
    assert f'UUID="{UUID}"' in lines[0] and 'modelName="NVIDIA H200"' in lines[0]


def test_prometheus_scrapes_it_and_the_readings_join_back_to_the_card(
    exporter: int, tmp_path: Path
) -> None:
    host = socket.gethostname()
    bare = ClusterState(
        observed_at=datetime.now(UTC),
        nodes=(
            Node(
                name=host,
                memory_total_bytes=2**40,
                gpus=(Gpu(uuid=UUID, index=0, model="H200", node=host),),
            ),
        ),
    )
    with RealPrometheus(tmp_path, [f"127.0.0.1:{exporter}"]) as prometheus:
        prometheus.wait_for_scrapes(2)
        up = httpx.get(f"{prometheus.url}/api/v1/query", params={"query": "up"}).json()
        assert up["data"]["result"][0]["value"][1] == "1"
        source = PrometheusSource(PrometheusSettings(url=prometheus.url, read_power=True))
        try:
            state = source.read(bare)
        finally:
            source.close()
    card = state.nodes[0].gpus[0]
    assert card.utilization.status == "fresh"
    assert card.utilization.value is not None and 0 <= card.utilization.value <= 100
    assert card.power_w.value is not None and 70 < card.power_w.value < 700
    total = RECORDED[0].devices[0].memory_total_bytes
    assert total is not None
    # DCGM counts MiB: used + free is the card's memory to within a MiB.
    assert card.memory_total_bytes.value is not None
    assert abs(card.memory_total_bytes.value - total) < 2**20


def test_unified_memory_is_served_from_the_host_and_marked_so() -> None:
    gb10 = RECORDED[0].model_copy(
        update={
            "devices": [
                RECORDED[0]
                .devices[0]
                .model_copy(
                    update={
                        "name": "NVIDIA GB10",
                        "memory_status": "not_supported",
                        "memory_total_bytes": None,
                        "memory_used_bytes": None,
                    }
                )
            ]
        }
    )
    memory = HostMemory(total_bytes=128 * 2**30, available_bytes=100 * 2**30)
    lines = card_lines(host_state(gb10, "gx10-a", memory))
    used = next(line for line in lines if line.startswith("DCGM_FI_DEV_FB_USED{"))
    assert 'memory_source="host-meminfo"' in used
    assert used.endswith(f" {28 * 1024}")  # 128 GiB total - 100 GiB available, in MiB
