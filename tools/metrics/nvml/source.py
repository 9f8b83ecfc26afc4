"""`NvmlSource`: the cards of the node Steward runs on, read through NVML, as a metric source.

Each `read` takes one NVML reading (tools.metrics.nvml.readings) and merges it into that node's
cards, matched by UUID: utilization, memory (the host's on unified-memory superchips, marked so
in the reading's source) and power. The reading's age is carried over to the observation's
clock. When NVML cannot be read the node's cards keep their last NVML values marked stale — or
missing when there never was one — with the reason; a host that is not a node of the observed
cluster leaves the observation as it is. The node is the one named by `NODE_NAME` (a pod's
downward API), else this host's name.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tools.metrics.nvml.readings import (
    HostMemory,
    NvmlUnavailable,
    Snapshot,
    gpus_from_snapshot,
    read_host_memory,
    read_snapshot,
)
from tools.model import ClusterState, Gpu, Metric, Node

FIELDS = ("utilization", "memory_used_bytes", "memory_total_bytes", "power_w")


class NvmlSource:
    """NVML on this host as a `MetricSource` (name "nvml")."""

    name = "nvml"

    def __init__(
        self,
        node: str | None = None,
        nvml: Any | None = None,
        host_memory: Callable[[], HostMemory] = read_host_memory,
        snapshot: Callable[[], Snapshot] | None = None,
    ) -> None:
        # In a pod the node's name is not the hostname: the downward API's NODE_NAME says it.
        self.node = node or os.environ.get("NODE_NAME") or socket.gethostname()
        self._read = snapshot or (lambda: read_snapshot(nvml))
        self._host_memory = host_memory
        self._last: dict[str, Gpu] = {}

    def read(self, state: ClusterState) -> ClusterState:
        node = state.node(self.node)
        if node is None:
            return state
        try:
            snapshot = self._read()
        except NvmlUnavailable as exc:
            return _with_node(state, self._unread(node, f"nvml: {exc}"))
        age = max(0.0, (datetime.now(UTC) - snapshot.taken_at).total_seconds())
        at = state.observed_at - timedelta(seconds=age)
        read = {
            g.uuid: g
            for g in gpus_from_snapshot(
                snapshot.model_copy(update={"taken_at": at}), node.name, self._host_memory()
            )
        }
        gpus: list[Gpu] = []
        for gpu in node.gpus:
            found = read.get(gpu.uuid)
            if found is None:
                gone = Metric.missing(f"nvml: no card {gpu.uuid} on {self.node}")
                gpus.append(gpu.model_copy(update=dict.fromkeys(FIELDS, gone)))
                continue
            self._last[gpu.uuid] = found
            gpus.append(gpu.model_copy(update={f: getattr(found, f) for f in FIELDS}))
        return _with_node(state, _with_readings(node, gpus))

    def _unread(self, node: Node, reason: str) -> Node:
        gpus: list[Gpu] = []
        for gpu in node.gpus:
            last = self._last.get(gpu.uuid)
            update: dict[str, Metric] = {}
            for f in FIELDS:
                old: Metric | None = getattr(last, f) if last is not None else None
                if old is not None and old.value is not None:
                    update[f] = old.but(status="stale", source=reason)
                else:
                    update[f] = Metric.missing(reason)
            gpus.append(gpu.model_copy(update=update))
        return _with_readings(node, gpus)


def _with_readings(node: Node, gpus: list[Gpu]) -> Node:
    """The node with these cards' readings."""
    return node.model_copy(update={"gpus": tuple(gpus)})


def _with_node(state: ClusterState, node: Node) -> ClusterState:
    nodes = tuple(node if n.name == node.name else n for n in state.nodes)
    return state.model_copy(update={"nodes": nodes})


def host_state(snapshot: Snapshot, host: str, memory: HostMemory) -> ClusterState:
    """This host as a one-node observation of its NVML reading (what `steward gpus --serve`
    exports under DCGM's names)."""
    gpus = gpus_from_snapshot(snapshot, host, memory)
    unified = any("unified memory" in g.memory_total_bytes.source for g in gpus)
    node = Node(name=host, memory_total_bytes=memory.total_bytes, unified_memory=unified, gpus=gpus)
    return ClusterState(observed_at=snapshot.taken_at, source="nvml", nodes=(node,))
