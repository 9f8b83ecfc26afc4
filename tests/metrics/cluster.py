"""A small cluster with known readings, and exporters that serve it under the real names.

Two nodes of two H200 each; `chat` (vLLM, model llama-3-8b) runs one replica on each node,
`code` (an engine whose Prometheus stores `vllm_*` names) one on gpu-b, and `render` a job on
gpu-a's second card. The truth is what the exporters serve; `bare` is the same cluster as a
backend that knows no metric would give it.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from lab.bench.metrics import without_readings
from lab.twin.engines import EngineExporter
from tools.metrics.exposition import card_lines, render
from tools.metrics.prometheus.queries import STAMP
from tools.metrics.serve import MetricsServer
from tools.model import (
    MISSING,
    ClusterState,
    Gpu,
    Metric,
    Node,
    Pool,
    ReplicaPlacement,
    Workload,
)

AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
GIB = 2**30
UNIFIED = "host-meminfo (NVML memory NotSupported on unified memory)"
"""The source of a GB10 card's memory readings, as the NVML source and the simulator give it."""


def _m(value: float) -> Metric:
    return Metric.fresh(value, AT, "truth")


def _gpu(
    node: str,
    index: int,
    *,
    util: float | None,
    used_gib: float,
    power: float,
    clients: tuple[str, ...] = (),
) -> Gpu:
    return Gpu(
        uuid=f"GPU-{node}-{index}",
        index=index,
        model="H200",
        node=node,
        utilization=MISSING if util is None else _m(util),
        memory_used_bytes=_m(used_gib * GIB),
        memory_total_bytes=_m(141 * GIB),
        power_w=_m(power),
        clients=clients,
    )


def truth() -> ClusterState:
    nodes = (
        Node(
            name="gpu-a",
            memory_total_bytes=512 * GIB,
            gpus=(
                _gpu("gpu-a", 0, util=97.0, used_gib=70.5, power=650.0, clients=("chat/0",)),
                _gpu("gpu-a", 1, util=55.0, used_gib=20.0, power=400.0, clients=("render/0",)),
            ),
        ),
        Node(
            name="gpu-b",
            memory_total_bytes=512 * GIB,
            gpus=(
                _gpu("gpu-b", 0, util=88.0, used_gib=71.0, power=610.0, clients=("chat/1",)),
                _gpu("gpu-b", 1, util=None, used_gib=30.0, power=300.0, clients=("code/0",)),
            ),
        ),
        Node(  # a GB10: NVML has no memory figures there, the host's are exported (marked so)
            name="gx10",
            memory_total_bytes=128 * GIB,
            unified_memory=True,
            gpus=(
                _gpu("gx10", 0, util=12.0, used_gib=28.0, power=40.0).model_copy(
                    update={
                        "model": "GB10",
                        "memory_used_bytes": Metric.fresh(28.0 * GIB, AT, UNIFIED),
                        "memory_total_bytes": Metric.fresh(128.0 * GIB, AT, UNIFIED),
                    }
                ),
            ),
        ),
    )

    def placed(index: int, node: str, card: str) -> ReplicaPlacement:
        return ReplicaPlacement(index=index, nodes=(node,), gpus=(card,), ready=True)

    workloads = (
        Workload(
            name="chat",
            kind="inference",
            pool="llm",
            desired_replicas=2,
            ready_replicas=2,
            model="llama-3-8b",
            queue_depth=_m(7),
            requests_running=_m(3),
            kv_cache_usage=_m(0.42),
            ttft_s=_m(0.3),
            queue_wait_s=_m(1.2),
            tokens_per_s=_m(100.0),
            placement=(placed(0, "gpu-a", "GPU-gpu-a-0"), placed(1, "gpu-b", "GPU-gpu-b-0")),
        ),
        Workload(
            name="code",
            kind="inference",
            pool="llm",
            desired_replicas=1,
            ready_replicas=1,
            model="qwen-coder",
            queue_depth=_m(2),
            requests_running=_m(1),
            kv_cache_usage=_m(0.1),
            placement=(placed(0, "gpu-b", "GPU-gpu-b-1"),),
        ),
        Workload(
            name="render",
            kind="render",
            pool="render",
            desired_replicas=1,
            ready_replicas=1,
            placement=(placed(0, "gpu-a", "GPU-gpu-a-1"),),
        ),
    )
    pools = (
        Pool(name="llm", workloads=("chat", "code")),
        Pool(name="render", workloads=("render",)),
    )
    return ClusterState(
        observed_at=AT, source="truth", nodes=nodes, workloads=workloads, pools=pools
    )


bare = without_readings
"""The cluster with every reading missing, as a backend without metrics observes it."""


class Exporters:
    """A DCGM-like exporter and two engine exporters (`vllm:` and `vllm_` names), each on its
    own loopback port, the engines' counters advancing on the wall clock."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.chat = EngineExporter(prefix="vllm:")
        self.code = EngineExporter(prefix="vllm_")
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._advance()
        self.servers = [
            MetricsServer(lambda: render(card_lines(self.state))),
            MetricsServer(lambda: self._engine(self.chat)),
            MetricsServer(lambda: self._engine(self.code)),
        ]
        self._ticker = threading.Thread(target=self._run, daemon=True)

    def _split(self, name: str) -> ClusterState:
        return self.state.model_copy(
            update={
                "observed_at": datetime.now(UTC),
                "workloads": tuple(w for w in self.state.workloads if w.name == name),
            }
        )

    def _advance(self) -> None:
        with self._lock:
            self.chat.update(self._split("chat"))
            self.code.update(self._split("code"))

    def _engine(self, exporter: EngineExporter) -> bytes:
        with self._lock:
            return render(exporter.lines())

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self._advance()

    @property
    def targets(self) -> list[str]:
        return [f"127.0.0.1:{s.port}" for s in self.servers]

    def __enter__(self) -> Exporters:
        for s in self.servers:
            s.start()
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._ticker.join(timeout=5)
        for s in self.servers:
            s.stop()


def per_node_answer(
    state: ClusterState, base: float, now: float
) -> list[tuple[dict[str, str], float]]:
    """What a DCGM exporter per node answers a card family's default query at POSIX time
    `now`: every card once, each node's series with its own sample time (`steward_t`, the
    i-th node's 5 + i seconds old) and each card its own value."""
    return [
        (
            {
                "UUID": gpu.uuid,
                "gpu": str(gpu.index),
                "Hostname": node.name,
                "instance": f"10.0.0.{i}:9400",
                "job": "dcgm",
                STAMP: repr(now - 5 - i),
            },
            base + 10 * i + gpu.index,
        )
        for i, node in enumerate(state.nodes)
        for gpu in node.gpus
    ]
