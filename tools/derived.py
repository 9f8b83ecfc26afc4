"""Facts derived from versioned world objects, worked out once per version and then reused.

A real backend hands over a fresh tree of objects on every observation (it parses what its API
sends), so nothing derived from a node or a workload can be kept by object identity. What can be
kept is what its producer's `version` names: `Derived` holds one fact per object name and the
version it came from, and reuses it while that version lasts — on the same object or on a fresh
one parsed from the same content.

`NodeFacts` gathers what the policy engine, placement and the planners read of a node on every
judgement (whether it takes work, which card models it carries, its labels), so that one pass
over an observation's nodes — the only one it needs, and on a freshly parsed observation the
expensive one, its objects being new to the processor's caches — answers all of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from itertools import compress
from operator import attrgetter, ne
from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

from tools.bases import TOKENS, versions_of
from tools.labels import matches

if TYPE_CHECKING:
    from tools.model import Node, Workload


class Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def readings_version(self) -> str: ...


NamedT = TypeVar("NamedT", bound=Named)
DerivedT = TypeVar("DerivedT")


class Derived(Generic[NamedT, DerivedT]):
    """A fact derived from a named, versioned world object, worked out once per version of it.

    The entry for a name holds the version it was derived from and is used while an object of
    that name and version is asked about — the same object or a fresh one parsed from the same
    content. An object of unknown version ("") is derived every time. One entry per name, so
    the cache is as large as the cluster; `derive` must read nothing but the object.

    `readings`: whether `derive` reads the object's readings (card utilization, memory, queue
    depth), which a metric source replaces without changing the producer's `version`: such a
    fact is keyed by both versions (tools.bases.versions_of). A fact of the object's shape only
    (labels, taints, cards, placement) is keyed by `version` and outlives the readings.
    """

    def __init__(
        self, derive: Callable[[NamedT], DerivedT], *, readings: bool, limit: int = 100_000
    ) -> None:
        self._derive = derive
        self._readings = readings
        self._limit = limit
        self.entries: dict[str, tuple[str, DerivedT]] = {}
        """Name -> (version, what was derived from it); read it, never write it."""

    def __call__(self, obj: NamedT) -> DerivedT:
        version = obj.version
        if not version:
            return self._derive(obj)
        if self._readings and obj.readings_version:
            version = versions_of(obj)
        entry = self.entries.get(obj.name)
        if entry is not None and entry[0] == version:
            return entry[1]
        if len(self.entries) >= self._limit:
            self.entries.clear()
        value = self._derive(obj)
        self.entries[obj.name] = (version, value)
        return value


class NodeFacts(NamedTuple):
    """What is read of a node on every judgement, derived once per version of it."""

    version: str
    ready: bool
    schedulable: bool
    """Takes work as observed: ready, not cordoned, no NoSchedule/NoExecute taint."""
    serviceable: bool
    """Takes work, or would once uncordoned (a cordon a plan may lift)."""
    models: frozenset[str]
    """The models of its cards."""
    labels: Mapping[str, str]


def _node_facts(node: Node) -> NodeFacts:
    # Each field read once and the cards' models in C: on a fresh observation this runs for
    # every node at a new version (50 a tick on the bench's fleet), each of its cards new to the
    # processor's caches.
    taints, ready = node.taints, node.ready
    tainted = bool(taints) and any(t.effect in ("NoSchedule", "NoExecute") for t in taints)
    serviceable = ready and not tainted
    return NodeFacts(
        node.version,
        ready,
        serviceable and not node.cordoned,
        serviceable,
        frozenset(map(_MODEL, node.gpus)),
        dict(node.labels),
    )


_MODEL = attrgetter("model")


placed_on: Derived[Workload, frozenset[str]] = Derived(
    lambda w: frozenset(n for r in w.placement for n in r.nodes), readings=False
)
"""The nodes a workload's replicas run on."""


class NodeIndex:
    """One observation's nodes by name, with their facts and the groupings made of them.

    A node's facts are derived once per version of it and kept by name (as `Derived` keeps its
    facts); a node of unknown version is read every time. When no node came, went, or changed
    what the groupings read (card models, labels) since the last observation whose every node
    had a version, the groupings themselves — nodes by card model and by label selector — are
    that observation's: a tick in which a share of the nodes posted new readings costs nothing
    per grouping, and a copy made to project a plan (unversioned nodes) neither pays for them
    again nor becomes the base.

    When the nodes are that observation's names in the same order, each at a known version,
    only the nodes whose version differs are read beyond their name and version (a step from
    the base, `_step`): on a freshly parsed observation every node is new to the processor's
    caches, and a pass in Python over 1,000 of them cost 2.2 ms of a 9 ms judgement. Names
    are looked up by position in the base then, not hashed again into a dict of their own.
    """

    __slots__ = (
        "_groups",
        "_readings",
        "by_name",
        "facts",
        "names",
        "nodes",
        "settled",
        "versions",
    )

    def __init__(self, nodes: Sequence[Node]) -> None:
        global _BASE  # noqa: PLW0603 - the observation the next index is compared with
        names = list(map(_NAME, nodes))
        versions = list(map(_VERSION, nodes))
        base = _BASE
        self._groups: Groups
        if base is not None and names and names == base.names and "" not in versions:
            facts, self._groups = _step(nodes, versions, base)
            positions = base.positions
            names = base.names  # the same list: the next comparison with it starts by identity
            _BASE = base._replace(versions=versions, facts=facts, groups=self._groups)
            settled = True
        else:
            facts, self._groups, versioned = _full(nodes, base)
            positions = {name: i for i, name in enumerate(names)}
            settled = versioned and len(positions) == len(names)
            if versioned:
                # Facts and groupings only, no node: holding the nodes would keep this whole
                # observation alive until the next one's index is built.
                _BASE = _Base(names if settled else [], versions, positions, facts, self._groups)
        self.by_name = ByName(nodes, positions)
        self.facts: dict[str, NodeFacts] = facts
        self.nodes = nodes
        self.names = names
        """The nodes' names, in order."""
        self.versions = versions
        """The nodes' producer versions, in order."""
        self.settled = settled
        """Every node has a version and a name of its own: what is derived per node can be
        stepped from one such observation to the next (tools.node_table)."""
        self._readings: list[str] | None = None

    def readings_versions(self) -> list[str]:
        """The nodes' readings versions, in order (read on first asking)."""
        if self._readings is None:
            self._readings = list(map(_READINGS, self.nodes))
        return self._readings

    def with_model(self, model: str) -> frozenset[str]:
        """The nodes carrying a card of this model."""
        key = ("model", model)
        found = self._groups.get(key)
        if found is None:
            found = frozenset(n for n, f in self.facts.items() if model in f.models)
            self._groups[key] = found
        return found

    def matching(self, selector: Mapping[str, str]) -> frozenset[str]:
        """The nodes whose labels hold every pair of `selector` (all nodes for an empty one)."""
        wanted = tuple(sorted(selector.items()))
        key = ("labels", wanted)
        found = self._groups.get(key)
        if found is None:
            found = frozenset(n for n, f in self.facts.items() if matches(f.labels, selector))
            self._groups[key] = found
        return found


Groups = dict[object, frozenset[str]]


class ByName:
    """An observation's nodes by name: the position of each name (the last one of a name
    repeated), over the observation's own nodes. Positions are shared with the next
    observation of the same names, which then never hashes them again."""

    __slots__ = ("_nodes", "_positions")

    def __init__(self, nodes: Sequence[Node], positions: Mapping[str, int]) -> None:
        self._nodes = nodes
        self._positions = positions

    def get(self, name: str) -> Node | None:
        at = self._positions.get(name)
        return None if at is None else self._nodes[at]


class _Base(NamedTuple):
    """What the next index is compared with: the last observation whose every node had a
    version — its names in order ([] when a name repeats: no step is taken from it), their
    versions and positions, the facts and the groupings."""

    names: list[str]
    versions: list[str]
    positions: Mapping[str, int]
    facts: dict[str, NodeFacts]
    groups: Groups


def _step(
    nodes: Sequence[Node], versions: list[str], base: _Base
) -> tuple[dict[str, NodeFacts], Groups]:
    """The facts and groupings of `nodes`, the base's names in its order, from the base's: only
    the nodes at another version than the base's are read."""
    facts = base.facts.copy()
    same_shape = True
    for at in compress(range(len(versions)), map(ne, versions, base.versions)):
        node = nodes[at]
        found = _FACTS(node)
        name = base.names[at]
        was = facts[name]
        if same_shape and (was.models != found.models or was.labels != found.labels):
            same_shape = False
        facts[name] = found
    return facts, (base.groups if same_shape else {})


def _full(nodes: Sequence[Node], base: _Base | None) -> tuple[dict[str, NodeFacts], Groups, bool]:
    """The facts of `nodes` by name, read one by one (the base's groupings if no node came,
    went or changed its models or labels), and whether every node had a version."""
    shaped = base.facts if base is not None else {}
    facts_of = _FACTS
    known = facts_of.entries
    facts: dict[str, NodeFacts] = {}
    same_shape = base is not None and len(nodes) == len(shaped)
    versioned = True
    for n in nodes:
        name, version = n.name, n.version
        entry = known.get(name)
        if entry is not None and entry[0] == version and version:
            found = entry[1]  # Derived's own lookup, inline: this loop is the hot one
        else:
            found = facts_of(n)
            versioned = versioned and bool(version)
        facts[name] = found
        if same_shape:
            was = shaped.get(name)
            if was is None or (
                was is not found and (was.models != found.models or was.labels != found.labels)
            ):
                same_shape = False
    same = base is not None and same_shape and len(facts) == len(shaped)
    return facts, (base.groups if base is not None and same else {}), versioned


def content_digest(obj: Node | Workload) -> bytes:
    """The SHA-256 of an object's canonical JSON, its producers' versions left out."""
    return hashlib.sha256(obj.model_dump_json(exclude=set(TOKENS)).encode()).digest()


node_digest: Derived[Node, bytes] = Derived(content_digest, readings=True)
workload_digest: Derived[Workload, bytes] = Derived(content_digest, readings=True)
"""Each node's and workload's content digest, for `ClusterState.digest`."""

_BASE: _Base | None = None
_NAME = attrgetter("name")
_VERSION = attrgetter("version")
_READINGS = attrgetter("readings_version")
_FACTS: Derived[Node, NodeFacts] = Derived(_node_facts, readings=False)
"""Each node's facts at the version last seen."""
