"""Network partitions on the twin: one client cut off from the API server, the others not.

A client is named by the bearer token it sends (each Steward replica's pod has its own service
account token). While its token is cut, the twin answers none of its requests and sends nothing
on its open watches: its requests hang until the client gives up, as across a partitioned
network. When the partition heals, what was held is lost, not answered late: the connection is
closed, as a connection the network dropped, and the client asks again.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

POLL_S = 0.05


def token_of(request: web.BaseRequest) -> str:
    auth = request.headers.get("Authorization", "")
    return auth[7:] if auth.startswith("Bearer ") else ""


class Dropped(Exception):
    """A request held through a partition: its connection is closed, nothing is answered."""


class Partitions:
    def __init__(self) -> None:
        self.cut: set[str] = set()
        self.held = 0
        """Requests (and watch events) held back so far."""

    async def hold(self, request: web.BaseRequest) -> None:
        """Return at once unless the request's client is cut off; else wait the partition out,
        then drop the connection (Dropped)."""
        token = token_of(request)
        if token not in self.cut:
            return
        self.held += 1
        while token in self.cut:  # the twin's stop cancels this with every other task
            await asyncio.sleep(POLL_S)
        if request.transport is not None:
            request.transport.close()
        raise Dropped(token)
