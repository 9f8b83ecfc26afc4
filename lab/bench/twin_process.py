"""The benchmark's twin in a process of its own, driven over loopback.

A user's Steward never shares a process with its API server. Served from the benchmark's own
process, the twin's event loop (serving watch streams, letting the world run) would compete with
the timed tick for the interpreter, and its heap (the store and its history, the simulator)
would sit in the tick's garbage collections. So `TwinProcess` starts the fleet's twin in a
fresh interpreter (`spawn`: no thread or lock of this one is copied) and drives it through the
twin's hooks (lab/twin/hooks.py), as a test in another process would: the world's 15 s and
the kubelets' heartbeats, each answering with the resourceVersion it reached.
"""

from __future__ import annotations

import logging
import multiprocessing
from multiprocessing.connection import Connection
from typing import Any

import httpx

START_S = 120.0
"""How long the twin may take to build and serve its fleet (a 1,000-node one: seconds)."""


class TwinProcess:
    """A `Twin` of the bench fleet of `nodes` nodes in a child process (see the module
    docstring). Use as a context manager."""

    def __init__(self, nodes: int, scrape_every_s: float, *, stamped: bool = True) -> None:
        """`stamped`: the exporters write the simulated time on every sample (False: none, and
        Prometheus dates each scrape on the wall clock, as real exporters are dated)."""
        self.nodes = nodes
        self.scrape_every_s = scrape_every_s
        self.stamped = stamped
        self.url = ""
        self._proc: Any = None
        self._http = httpx.Client(timeout=60.0)

    def __enter__(self) -> TwinProcess:
        ctx = multiprocessing.get_context("spawn")
        mine, theirs = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(
            target=_serve,
            args=(self.nodes, self.scrape_every_s, self.stamped, theirs),
            name="steward-bench-twin",
            daemon=True,
        )
        self._proc.start()
        theirs.close()
        if not mine.poll(START_S):
            self.close()
            raise RuntimeError(f"the twin did not start within {START_S:g} s")
        self.url = str(mine.recv())
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()
        if self._proc is not None:
            self._proc.terminate()
            self._proc.join(10)
            self._proc = None

    def advance(self, seconds: float) -> int:
        """Let `seconds` of the world pass; the resourceVersion it reached."""
        return self._post("/twin/advance", params={"seconds": seconds})

    def heartbeat(self, names: list[str]) -> int:
        """These nodes' kubelets post their status; the resourceVersion reached."""
        return self._post("/twin/heartbeat", json={"nodes": names})

    def request_count(self) -> int:
        """API requests the twin has served (its hooks aside)."""
        return len(self._http.get(f"{self.url}/twin/requests").raise_for_status().json())

    def _post(self, path: str, **kw: Any) -> int:
        body = self._http.post(f"{self.url}{path}", **kw).raise_for_status().json()
        return int(body["resourceVersion"])


def _serve(nodes: int, scrape_every_s: float, stamped: bool, tell: Connection) -> None:
    """The child: build the fleet, serve it, send the URL, serve until terminated."""
    import structlog

    from lab.bench.loop import _fleet
    from lab.sim.backend import SimCluster
    from lab.twin.server import Twin

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    twin = Twin(SimCluster(_fleet(nodes, scrape_every_s)))
    twin.exporters.stamped = stamped
    twin.start()
    tell.send(twin.url)
    tell.close()
    twin.serve_forever()
