"""What placement derives from one whole observation, kept with the observation itself.

One observation is ranked against many times in a tick (every replica, every workload), so what
is derived from the whole of it — every node's capacity, the anomalies, the selector index — is
worked out once per `ClusterState` and stored in it (`ClusterState.derived`, which a copy does
not carry). Nothing here is keyed by object identity: an entry lives and dies with its state,
and a catalogue is told apart by its content digest. Reuse across observations is per node and
by version (tools/placement/capacity.py, anomalies.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, cast

from tools.model import ClusterState
from tools.placement.catalog import Catalog

T = TypeVar("T")


class StateCache(Generic[T]):
    """Values derived from (state, catalogue) pairs, stored in the state under `name`."""

    def __init__(self, name: str) -> None:
        self._name = name

    def get(
        self, state: ClusterState, catalog: Catalog, build: Callable[[ClusterState, Catalog], T]
    ) -> T:
        key = (self._name, catalog.digest)
        memo = state.derived
        if key in memo:
            return cast(T, memo[key])
        # Two threads asking at once both build it; either value is right, the last one stays.
        value = build(state, catalog)
        memo[key] = value
        return value
