"""Reading observations from JSON at the edge, each node and workload validated once per version.

Validating a whole 1,000-node x 8-card `ClusterState` (`ClusterState.model_validate_json`)
builds some 60,000 models, and that — not decoding the JSON — is what it costs: ~0.3 s on a
2-core machine, every observation. A backend that receives the whole cluster as JSON each time
(a list call, a dump) need not validate every node again: a node or workload whose name and
version are those of one validated before has the same content (tools.model.Versioned), so the
validated object is taken again; only new versions, and objects of unknown version, are
validated. The JSON is decoded by pydantic-core's parser, the rest of the observation (pools,
modes, links, its time) validated as usual, and the state assembled from parts that are all
validated, without validating them twice.

The state parsed equals `ClusterState.model_validate_json` of the same text. Its unchanged
nodes are the very objects of the previous parse — what a real backend's informer cache hands
out too; the benchmarks, which must show what a cold object costs, parse every observation in
full instead (lab/bench/fresh.py) and time this apart.
"""

from __future__ import annotations

from typing import TypeVar

import pydantic_core
from pydantic import ValidationError

from tools.errors import InvalidInput
from tools.model import ClusterState, Node, Workload

V = TypeVar("V", Node, Workload)


class StateParser:
    """Parses successive observations of one cluster, reusing what a version says is known."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._workloads: dict[str, Workload] = {}
        self.validated = 0
        """Nodes and workloads validated by the last parse (the others were known)."""

    def parse(self, text: str | bytes, where: str = "observation") -> ClusterState:
        """The `ClusterState` in `text`; InvalidInput naming `where` and the first problem."""
        try:
            raw = pydantic_core.from_json(text)
        except ValueError as exc:
            raise InvalidInput(f"{where}: not JSON ({exc}); send one ClusterState") from exc
        if not isinstance(raw, dict):
            what = type(raw).__name__
            raise InvalidInput(f"{where}: a ClusterState is a JSON object, got {what}")
        self.validated = 0
        try:
            nodes = self._all(Node, self._nodes, raw.pop("nodes", []), "nodes")
            workloads = self._all(Workload, self._workloads, raw.pop("workloads", []), "workloads")
            head = ClusterState.model_validate(raw)
        except ValidationError as exc:
            raise InvalidInput(f"{where}: {_first(exc)}") from exc
        except _Bad as exc:
            raise InvalidInput(f"{where}: {exc}") from exc
        self._nodes = {n.name: n for n in nodes if n.version}
        self._workloads = {w.name: w for w in workloads if w.version}
        # Every part is a validated model: assembled without validating them again.
        return head.model_copy(update={"nodes": nodes, "workloads": workloads})

    def _all(self, cls: type[V], known: dict[str, V], items: object, field: str) -> tuple[V, ...]:
        if not isinstance(items, list):
            raise _Bad(f"{field}: a list is expected, got {type(items).__name__}")
        out: list[V] = []
        for i, item in enumerate(items):
            if isinstance(item, dict):
                name, version = item.get("name"), item.get("version")
                seen = known.get(name) if isinstance(name, str) and version else None
                if (
                    seen is not None
                    and seen.version == version
                    and seen.readings_version == item.get("readings_version", "")
                ):
                    out.append(seen)
                    continue
            try:
                out.append(cls.model_validate(item))
            except ValidationError as exc:
                raise _Bad(f"{field}.{i}.{_first(exc)}") from exc
            self.validated += 1
        return tuple(out)


class _Bad(Exception):
    """A problem found in one node or workload, its place already named."""


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    place = ".".join(str(p) for p in error["loc"]) or "(top)"
    return f"{place}: {error['msg']}"
