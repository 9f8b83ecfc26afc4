"""`World`: what the engine's helpers (lifecycle, metrics) may see of it.

lifecycle.py and metrics.py work on the engine's state for it. They name this Protocol instead
of the `Engine` class, so that the engine imports them and nothing imports the engine back: the
simulator's modules form a tree, not a circle.
"""

from __future__ import annotations

from typing import Protocol

from lab.sim.placement import Placer
from lab.sim.profiles import Profile, WorkloadSpec
from lab.sim.state import Replica, SimState, WorkloadRun


class World(Protocol):
    profile: Profile
    state: SimState
    specs: dict[str, WorkloadSpec]
    placer: Placer
    dirty_nodes: set[str]
    dirty_workloads: set[str]
    dirty_links: bool
    kv_capacity: dict[str, int]

    def ready_count(self, run: WorkloadRun) -> int: ...

    def replicas_on(self, node: str) -> list[Replica]: ...

    def steady_utilization(self, r: Replica) -> float: ...

    def replica_busy_s(self, r: Replica) -> float: ...

    def path_reading(
        self, link: str, path: str, healthy: float, gid: int, t: float
    ) -> tuple[float, int]: ...
