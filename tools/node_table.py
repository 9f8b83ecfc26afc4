"""`NodeTable`: what is derived from every node of an observation, by name, stepped across ticks.

A pass that derives a fact per node through `tools.derived.Derived` still reads each node's name
and versions to find its entry: on a freshly parsed observation those are a thousand objects new
to the processor's caches, 3-4 ms a pass at 1,000 nodes, and one tick makes several such passes
(which cards read fresh, which are busy, which node may share a card). The observation's
`NodeIndex` has read the names and versions once already. When this observation has the last
settled one's names in the same order (every node at a known version, no name twice), its table
is the last one's with only the nodes at another version — or, for a fact of the readings, at
another readings version — derived again; otherwise every node is derived. A table is made once
per observation (kept in `ClusterState.derived`) and holds derived values only, never a node:
holding nodes would keep old observations alive.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import compress
from operator import ne, or_
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

if TYPE_CHECKING:
    from tools.model import ClusterState, Node

T = TypeVar("T")


class _Last(NamedTuple, Generic[T]):
    names: list[str]
    versions: list[str]
    readings: list[str] | None
    table: dict[str, T]


class NodeTable(Generic[T]):
    """`derive` of each node of an observation, by name (see the module docstring).

    `readings`: whether `derive` reads the node's readings (card utilization, memory, power),
    which a metric source replaces under the producer's `version` with a `readings_version` of
    its own: such a fact is derived again when either changed. `derive` must read nothing but
    the node."""

    def __init__(self, derive: Callable[[Node], T], *, readings: bool) -> None:
        self._derive = derive
        self._readings = readings
        self._last: _Last[T] | None = None

    def __call__(self, state: ClusterState) -> dict[str, T]:
        derived = state.derived
        found: dict[str, T] | None = derived.get(self)
        if found is None:
            found = derived[self] = self._table(state)
        return found

    def _table(self, state: ClusterState) -> dict[str, T]:
        index = state.node_index
        names, versions, nodes = index.names, index.versions, index.nodes
        readings = index.readings_versions() if self._readings else None
        last, derive = self._last, self._derive
        if last is not None and index.settled and (names is last.names or names == last.names):
            table = last.table.copy()
            changed = map(ne, versions, last.versions)
            if readings is not None and last.readings is not None:
                changed = map(or_, changed, map(ne, readings, last.readings))
            for at in compress(range(len(names)), changed):
                table[names[at]] = derive(nodes[at])
        else:
            table = {node.name: derive(node) for node in nodes}
        if index.settled:
            # An observation with a node of unknown version (a plan's projection) is derived
            # whole and never becomes the base.
            self._last = _Last(names, versions, readings, table)
        return table
