"""The twin: a simulated GPU cluster served as a Kubernetes API on loopback.

`Twin` owns a `SimCluster`, the object store its mirror fills, and an aiohttp server on its own
thread and event loop (so tests start it in-process; `steward twin` runs it as a process). Time
advances with the wall clock times `speed`, or only when asked (`advance`, or
`POST /twin/advance?seconds=S`) when `speed` is 0, which keeps tests fast and deterministic.

Besides the API (lab/twin/api.py) it serves discovery (/api, /apis, /api/v1, /apis/G/V,
/version), health, each workload's OpenAI-compatible endpoint, its cards, engines and job queues
as DCGM, vLLM and Kueue exporters for Prometheus (lab/twin/exporters.py), and the twin's own
hooks under /twin/ (lab/twin/hooks.py: advance, heartbeats, faults, and the log of the
requests it saw: method, path, dryRun, status, and the attributes the authorizer judged).
`partitions` cuts chosen clients off (partitions.py).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from aiohttp import web

from lab.sim.backend import SimCluster
from lab.twin import api, hooks, serving
from lab.twin.auth import (
    AllowAll,
    Attributes,
    Authorizer,
    forbidden,
    named_in_selector,
    verb_of,
)
from lab.twin.exporters import Exporters
from lab.twin.faults import Faults, FaultSettings
from lab.twin.mirror import Mirror
from lab.twin.partitions import Dropped, Partitions, token_of
from lab.twin.parts import RequestRecord
from lab.twin.resources import group_versions, resource_list
from lab.twin.store import ApiError, Store
from lab.twin.writes import Writes

T = TypeVar("T")
TICK_S = 0.1
"""Wall seconds between the clock's advances of the simulator (speed > 0)."""


class Twin:
    """See the module docstring. Use as a context manager, or `start()` and `stop()`."""

    def __init__(
        self,
        sim: SimCluster,
        *,
        namespace: str = "default",
        speed: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: FaultSettings | None = None,
        authorizer: Authorizer | None = None,
        tokens: dict[str, str] | None = None,
        controller_lag_s: float = 0.0,
    ) -> None:
        if speed < 0:
            raise ValueError(f"speed must be >= 0, got {speed}")
        if controller_lag_s < 0:
            raise ValueError(f"controller_lag_s must be >= 0, got {controller_lag_s}")
        if sim.clock.speed:
            sim.clock.speed = 0.0  # the twin paces time itself; the sim must never sleep
        self.sim = sim
        self.namespace = namespace
        self.speed = speed
        self.host, self.port = host, port
        self.store = Store(lambda: self.sim.now)
        self.faults = Faults(faults)
        self.authorizer: Authorizer = authorizer or AllowAll()
        self.tokens = tokens or {}
        self.partitions = Partitions()
        self.requests: list[RequestRecord] = []
        self.asked: list[Attributes] = []
        """What the authorizer was asked, as it was asked (a watch from its start, not its end)."""
        self.stopping = False
        self.controller_lag_s = controller_lag_s
        """How long after a client's write the controllers' answer to it (the pods a scale
        starts or marks for deletion) is published; 0: at once, before the response."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self.mirror = Mirror(sim, self.store, namespace, "")
        self.writes = Writes(self.mirror)
        self.exporters = Exporters(self)

    # -- life -----------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> Twin:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="steward-twin", daemon=True)
        self._thread.start()
        self._started.wait(30)
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start(), which re-raises it
            self._error = exc
        finally:
            self._started.set()
        loop.run_forever()
        loop.run_until_complete(self._shutdown())
        loop.close()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware], client_max_size=16 * 2**20)
        self._routes(app)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = int(self._runner.addresses[0][1])
        self.mirror.endpoint = f"{self.url}/twin/workloads"
        self.store.hooks.append(self._hook)
        self.mirror.sync()
        if self.speed > 0:
            asyncio.get_running_loop().create_task(self._clock())

    async def _shutdown(self) -> None:
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        if self._loop is None:
            return
        self.stopping = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def serve_forever(self) -> None:
        """Block until interrupted (the `steward twin` command)."""
        assert self._thread is not None
        while self._thread.is_alive():
            self._thread.join(0.5)

    # -- time -----------------------------------------------------------------------------------

    async def _clock(self) -> None:
        last = time.monotonic()
        while not self.stopping:
            await asyncio.sleep(TICK_S)
            now = time.monotonic()
            self._advance((now - last) * self.speed)
            last = now

    def _advance(self, seconds: float) -> None:
        if seconds > 0:
            self.sim.advance(seconds)
        self.mirror.sync()

    def call(self, fn: Callable[[], T]) -> T:
        """Run `fn` on the server's loop (where the store lives) and return its result."""
        assert self._loop is not None

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(60)

    def advance(self, seconds: float) -> None:
        """Run the simulated world for `seconds` and publish what changed."""
        self.call(lambda: self._advance(seconds))

    def configure_faults(self, settings: FaultSettings) -> None:
        self.call(lambda: self.faults.configure(settings))

    def after_write(self, dry_run: bool) -> None:
        """Publish what a client's write did to the world (on the server's loop): at once, or
        `controller_lag_s` later, as a real controller acts a moment after the write."""
        if dry_run:
            return
        if self.controller_lag_s > 0 and self._loop is not None:
            self._loop.call_later(self.controller_lag_s, self.mirror.sync)
        else:
            self.mirror.sync()

    def _hook(self, res: Any, old: Any, new: Any, dry_run: bool) -> None:
        self.writes.hook(res, old, new, dry_run)

    # -- HTTP -----------------------------------------------------------------------------------

    def _routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/version", self._version)
        for path in ("/healthz", "/readyz", "/livez"):
            r.add_get(path, self._ok)
        r.add_get("/api", self._api_versions)
        r.add_get("/apis", self._api_groups)
        r.add_get("/api/v1", self._core_resources)
        r.add_get("/apis/{group}", self._group)
        r.add_get("/apis/{group}/{version}", self._group_resources)
        r.add_get("/twin/workloads/{workload}/v1/models", functools.partial(serving.models, self))
        r.add_get("/twin/workloads/{workload}/metrics", functools.partial(serving.metrics, self))
        r.add_post(
            "/twin/workloads/{workload}/v1/chat/completions",
            functools.partial(serving.chat, self),
        )
        self.exporters.routes(app)
        hooks.routes(self, app)
        r.add_route("*", "/api/v1/{tail:.+}", self._resource)
        r.add_route("*", "/apis/{group}/{version}/{tail:.+}", self._resource)

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except ApiError as exc:
            return api.respond(exc.status(), exc.code)

    async def _resource(self, request: web.Request) -> web.StreamResponse:
        target = api.parse(request.path)
        user = self._user(request)
        dry = "dryRun" in request.query
        status = 200
        attrs: Attributes | None = None
        try:
            await self.partitions.hold(request)
            if target is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            watching = request.query.get("watch") in ("true", "1")
            name = target.name or ""
            if not name and request.method == "GET":
                name = named_in_selector(request.query.get("fieldSelector"))
            attrs = Attributes(
                user=user,
                verb=verb_of(request.method, target.name is not None, watching),
                group=target.res.group,
                resource=target.res.plural,
                subresource=target.sub or "",
                namespace=target.namespace or "",
                name=name,
            )
            if len(self.asked) > 200_000:
                del self.asked[:100_000]
            self.asked.append(attrs)
            if not self.authorizer.allowed(attrs):
                raise forbidden(attrs)
            drawn = self.faults.draw(request.method)
            if drawn is not None:
                kind, error = drawn
                if kind == "timeout":
                    await asyncio.sleep(self.faults.settings.timeout_s)
                raise error
            response = await api.handle(self, request, target)
            status = response.status
            return response
        except Dropped:
            status = 0  # nothing answered: the connection was closed
            return web.Response(status=504)
        except ApiError as exc:
            status = exc.code
            headers = {"Retry-After": "1"} if exc.code == 429 else {}
            resp = api.respond(exc.status(), exc.code)
            resp.headers.update(headers)
            return resp
        finally:
            if len(self.requests) > 200_000:
                del self.requests[:100_000]
            gone = request.transport is None or request.transport.is_closing()
            self.requests.append(
                RequestRecord(
                    request.method,
                    request.path,
                    request.query_string,
                    dry,
                    status,
                    user,
                    attrs,
                    client_gone=gone,
                )
            )

    def cut(self, token: str) -> None:
        """Partition the client that sends `token` from the API server (see partitions.py)."""
        self.call(lambda: self.partitions.cut.add(token))

    def heal(self, token: str) -> None:
        self.call(lambda: self.partitions.cut.discard(token))

    def _user(self, request: web.Request) -> str:
        return self.tokens.get(token_of(request), "system:anonymous")

    async def _ok(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _version(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {
                "major": "1",
                "minor": "32",
                "gitVersion": "v1.32.4-steward-twin",
                "gitCommit": "",
                "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.23",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        )

    async def _api_versions(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}
                ],
            }
        )

    def _group_doc(self, group: str, versions: list[str]) -> dict[str, Any]:
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": gvs,
            "preferredVersion": gvs[0],
        }

    async def _api_groups(self, _request: web.Request) -> web.Response:
        groups = [self._group_doc(g, vs) for g, vs in group_versions().items()]
        return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})

    async def _group(self, request: web.Request) -> web.Response:
        group = request.match_info["group"]
        versions = group_versions().get(group)
        if versions is None:
            raise ApiError(404, "NotFound", f"no API group {group!r}")
        return web.json_response(self._group_doc(group, versions))

    async def _core_resources(self, _request: web.Request) -> web.Response:
        return web.json_response(resource_list("", "v1"))

    async def _group_resources(self, request: web.Request) -> web.Response:
        found = resource_list(request.match_info["group"], request.match_info["version"])
        if found is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return web.json_response(found)
