"""Fresh observations for the benchmarks: every one parsed from JSON, a share of nodes changed.

A real backend hands the loop a new tree of objects each time it observes (it parses what the
API sends); the simulator shares every unchanged object between its snapshots. Timed on the
simulator's objects, a cache keyed by object identity looks fast and a real cluster never sees
that speed. So the benchmarks observe through this module:

- `FreshSim` is the simulated cluster observed as a real backend would hand it over: each new
  snapshot dumped to JSON and parsed back (`ClusterState.model_validate_json`), so no object is
  shared with any earlier observation.
  A fleet whose nodes are scraped every `INTERVAL_S / churn` seconds (staggered; workloads as
  usual) changes `churn` of its nodes per tick.
- `ChurnedFleet` does the same for a fixed synthetic fleet (`bench policy`, `bench place`): each
  observation changes `churn` of the nodes (a new power reading on each of their cards), and is
  parsed afresh from JSON.

What parsing costs is timed apart (`parse` figures): it is the backend's work, paid once per
observation at the edge, and the loop never validates the state again after it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from lab.sim.backend import SimCluster
from lab.sim.scenario import Scenario
from tools.model import ClusterState, Gpu, Metric, Node

INTERVAL_S = 15.0
"""The loop's tick: 15 s of world time between two decisions."""
MIN_CHURN = INTERVAL_S / 300.0
"""A fleet scraped less often than every five minutes would read as missing (Prometheus'
lookback), so a tick changes at least this share of the simulated fleet."""


def parse(text: str | bytes) -> ClusterState:
    """One observation validated at the edge, from JSON, as a backend receives it."""
    return ClusterState.model_validate_json(text)


def scrape_interval_s(churn: float) -> float:
    """The node scrape interval at which `churn` of a staggered fleet is scraped per tick."""
    if not MIN_CHURN <= churn <= 1.0:
        raise ValueError(f"churn {churn:g} is not in [{MIN_CHURN:g}, 1]")
    return INTERVAL_S / churn


class FreshSim(SimCluster):
    """The simulated cluster, every new snapshot handed over as freshly parsed JSON.

    `prepare()` parses the snapshot due (the bench calls it untimed, with the world's time);
    `observe()` returns it, or parses a new one if an action changed the cluster since.
    """

    def __init__(self, scenario: Scenario, **options: Any) -> None:
        super().__init__(scenario, **options)
        self._source: ClusterState | None = None
        self._fresh: ClusterState | None = None
        self.parse_ms: list[float] = []
        """How long each parse took (dumping the snapshot not counted)."""
        self.changed: list[float] = []
        """Per parse: the share of nodes that differ from the previous observation's."""

    def prepare(self) -> ClusterState:
        snapshot = super().observe()
        if snapshot is not self._source or self._fresh is None:
            text = snapshot.model_dump_json()
            before = {n.name: n for n in self._fresh.nodes} if self._fresh is not None else {}
            self._fresh = None  # one fresh observation alive at a time, as in a backend
            start = time.perf_counter()
            fresh = parse(text)
            self.parse_ms.append((time.perf_counter() - start) * 1000)
            self.changed.append(_changed_share(before, fresh))
            self._source, self._fresh = snapshot, fresh
        return self._fresh

    def observe(self) -> ClusterState:
        return self.prepare()


def _changed_share(before: dict[str, Node], after: ClusterState) -> float:
    if not before or not after.nodes:
        return 1.0
    changed = sum(1 for n in after.nodes if before.get(n.name) != n)
    return changed / len(after.nodes)


class ChurnedFleet:
    """Successive observations of one synthetic fleet, `churn` of its nodes changed in each.

    The nodes changed take turns (a window that moves on by its size each time), so every node
    changes in time. Only the changed nodes are dumped again; each observation is parsed whole.
    """

    def __init__(self, state: ClusterState, churn: float) -> None:
        if not 0.0 <= churn <= 1.0:
            raise ValueError(f"churn {churn:g} is not in [0, 1]")
        self.churn = churn
        nodes = list(state.nodes)
        self._nodes = nodes
        self._texts = [n.model_dump_json() for n in nodes]
        head = state.model_copy(update={"nodes": ()}).model_dump_json()
        marker = '"nodes":[]'
        cut = head.index(marker)
        self._before, self._after = head[:cut] + '"nodes":[', "]" + head[cut + len(marker) :]
        self._turn = 0
        self.parse_ms: list[float] = []

    @property
    def per_observation(self) -> int:
        """Nodes changed in each observation."""
        return round(self.churn * len(self._nodes))

    def next(self) -> ClusterState:
        count = len(self._nodes)
        for i in range(self.per_observation):
            at = (self._turn * self.per_observation + i) % count
            self._nodes[at] = changed(self._nodes[at], self._turn)
            self._texts[at] = self._nodes[at].model_dump_json()
        self._turn += 1
        text = self._before + ",".join(self._texts) + self._after
        start = time.perf_counter()
        state = parse(text)
        self.parse_ms.append((time.perf_counter() - start) * 1000)
        return state


def changed(node: Node, turn: int) -> Node:
    """`node` after a scrape that read its cards' power a watt apart."""
    step = 1.0 if turn % 2 == 0 else -1.0
    gpus = tuple(_rescraped(g, step) for g in node.gpus)
    return node.model_copy(update={"gpus": gpus})


def _rescraped(gpu: Gpu, step: float) -> Gpu:
    power = gpu.power_w
    reading = Metric.fresh(max(0.0, (power.value or 0.0) + step), power.observed_at or _EPOCH)
    return gpu.model_copy(update={"power_w": reading.but(source=power.source)})


_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
