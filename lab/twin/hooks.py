"""The twin's own hooks under /twin/: what a test or a benchmark in another process uses to
drive the simulated world over loopback, as it would call the `Twin` methods in-process.

- `POST /twin/advance?seconds=S`: run the world S seconds and publish what changed;
- `POST /twin/heartbeat` with `{"nodes": [...]}`: those kubelets post their status;
- `POST /twin/faults`: the fault settings (lab/twin/faults.py);
- `GET /twin/readings`: what the simulator measures now; `GET /twin/requests`: the API
  requests seen so far.

The writes answer with the store's resourceVersion after them, so the caller can wait until
its watches have seen that far (the benchmark's "watch events drained before the tick").
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from lab.twin.faults import FaultSettings
from lab.twin.parts import TwinParts
from lab.twin.readings import readings
from lab.twin.store import ApiError


def routes(twin: TwinParts, app: web.Application) -> None:
    async def advance(request: web.Request) -> web.Response:
        try:
            seconds = float(request.query.get("seconds", "0"))
        except ValueError:
            raise ApiError(400, "BadRequest", "seconds must be a number") from None
        twin._advance(seconds)
        return web.json_response(
            {"elapsed_s": twin.sim.elapsed_s, "resourceVersion": str(twin.store.rv)}
        )

    async def heartbeat(request: web.Request) -> web.Response:
        body: Any = await request.json()
        names = body.get("nodes") if isinstance(body, dict) else None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ApiError(400, "BadRequest", 'the body must be {"nodes": [names]}')
        twin.mirror.heartbeat(names)
        return web.json_response({"resourceVersion": str(twin.store.rv)})

    async def faults(request: web.Request) -> web.Response:
        twin.faults.configure(FaultSettings.model_validate(await request.json()))
        return web.json_response(twin.faults.settings.model_dump())

    async def measured(_request: web.Request) -> web.Response:
        return web.json_response(readings(twin.sim.observe()))

    async def requests(_request: web.Request) -> web.Response:
        return web.json_response(
            [
                {
                    "method": r.method,
                    "path": r.path,
                    "query": r.query,
                    "dryRun": r.dry_run,
                    "status": r.status,
                    "user": r.user,
                }
                for r in twin.requests
            ]
        )

    r = app.router
    r.add_post("/twin/advance", advance)
    r.add_post("/twin/heartbeat", heartbeat)
    r.add_post("/twin/faults", faults)
    r.add_get("/twin/requests", requests)
    r.add_get("/twin/readings", measured)
