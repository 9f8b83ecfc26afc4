"""A small cache keyed by the identity of a state object (and the catalogue read with it).

`ClusterState` is immutable and one observation is ranked against many times in a tick (every
replica, every workload), so what is derived from it is computed once per state object. Entries
hold the state itself, so an id cannot be reused while its entry lives; the oldest go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from tools.model import ClusterState
from tools.placement.catalog import Catalog

T = TypeVar("T")


class StateCache(Generic[T]):
    """Values derived from (state, catalogue) pairs, the last `size` of them."""

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[int, int], tuple[ClusterState, Catalog, T]] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, state: ClusterState, catalog: Catalog, build: Callable[[ClusterState, Catalog], T]
    ) -> T:
        key = (id(state), id(catalog))
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] is state and hit[1] is catalog:
                self._entries.move_to_end(key)
                return hit[2]
        value = build(state, catalog)
        with self._lock:
            self._entries[key] = (state, catalog, value)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value
