"""What the twin's request handlers use of the twin: its parts, and the log of requests it saw.

The server (lab/twin/server.py) puts the parts together and routes each request to a handler
module (api.py, hooks.py, serving.py, exporters.py); the handlers take the twin as `TwinParts`,
so they never import the server that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lab.sim.backend import SimCluster
from lab.twin.auth import Attributes
from lab.twin.faults import Faults
from lab.twin.mirror import Mirror
from lab.twin.partitions import Partitions
from lab.twin.store import Store


@dataclass(frozen=True, slots=True)
class RequestRecord:
    method: str
    path: str
    query: str
    dry_run: bool
    status: int
    user: str
    attrs: Attributes | None = None
    """What the authorizer was asked (None: not a resource request the twin knows)."""
    client_gone: bool = False
    """The client had closed the connection before the answer was ready (it gave up waiting,
    as a client does on its own request timeout): what the request did still happened, but the
    client never heard of it, so it may send the same request again."""


class TwinParts(Protocol):
    """The twin as its handlers see it (lab.twin.server.Twin is the one implementation)."""

    sim: SimCluster
    store: Store
    mirror: Mirror
    faults: Faults
    partitions: Partitions
    requests: list[RequestRecord]
    namespace: str
    speed: float
    stopping: bool

    def after_write(self, dry_run: bool) -> None:
        """Publish what the controllers make of a client's write (at once or after the lag)."""
        ...

    def _advance(self, seconds: float) -> None: ...
