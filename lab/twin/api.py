"""The resource endpoints: get, list, watch, create, update, patch, delete, and subresources.

Paths as the API server serves them: `/api/v1[/namespaces/NS]/PLURAL[/NAME[/SUB]]` and
`/apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME[/SUB]]`. Subresources: `scale` (a real
autoscaling/v1 Scale), `status`, and `eviction` (policy/v1, refused with 429 while a
PodDisruptionBudget allows no disruption). `?dryRun=All` validates and changes nothing; a
list with `?watch=true` streams newline-delimited JSON events, with bookmarks when asked.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from lab.twin import nodes, patches, tables
from lab.twin.partitions import Dropped
from lab.twin.parts import TwinParts
from lab.twin.resources import PDB, POD, Resource, find
from lab.twin.selectors import SelectorError, field_matcher, label_matcher
from lab.twin.store import ApiError, Obj, Watcher, deep, not_found
from tools.labels import matches

BOOKMARK_S = 2.0
"""How often an idle watch that asked for bookmarks gets one (a real server: about a minute)."""


@dataclass(frozen=True, slots=True)
class Target:
    res: Resource
    namespace: str | None
    name: str | None
    sub: str | None


def parse(path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    res = find(group, version, rest[0])
    if res is None:
        return None
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    return Target(res, namespace, name, sub)


def respond(obj: Any, status: int = 200) -> web.Response:
    return web.Response(
        status=status, body=json.dumps(obj).encode(), content_type="application/json"
    )


def dry_run_of(request: web.Request, body: Any = None) -> bool:
    values = request.query.getall("dryRun", [])
    if isinstance(body, dict):
        values += (body.get("dryRun") or []) + (body.get("deleteOptions") or {}).get("dryRun", [])
    for v in values:
        if v != "All":
            raise ApiError(400, "BadRequest", f"unsupported dryRun value {v!r}: only All")
    return bool(values)


async def body_of(request: web.Request) -> Any:
    if "protobuf" in request.headers.get("Content-Type", ""):
        raise ApiError(
            415,
            "UnsupportedMediaType",
            "the twin speaks JSON only: send application/json (kubectl: use create -f / apply -f "
            "rather than the typed create subcommands, which send protobuf)",
        )
    raw = await request.read()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ApiError(400, "BadRequest", f"the body is not JSON: {exc}") from exc


async def handle(twin: TwinParts, request: web.Request, t: Target) -> web.StreamResponse:
    store = twin.store
    method = request.method
    res, ns = t.res, t.namespace or ""
    if res.namespaced and t.name is not None and t.namespace is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if t.sub is not None:
        return await subresource(twin, request, t)
    if method == "GET" and t.name is None:
        try:
            labels = label_matcher(request.query.get("labelSelector"))
            fields = field_matcher(request.query.get("fieldSelector"))
        except SelectorError as exc:
            raise ApiError(400, "BadRequest", str(exc)) from exc
        if request.query.get("watch") in ("true", "1"):
            return await watch(
                twin, request, res, namespace=t.namespace, labels=labels, fields=fields
            )
        items = store.select(res, t.namespace, labels, fields)
        rv = str(store.rv)
        if "as=Table" in request.headers.get("Accept", ""):
            return respond(tables.table(res, items, rv, twin.sim.now))
        return respond(
            {
                "kind": f"{res.kind}List",
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": rv},
                "items": items,
            }
        )
    if method == "GET":
        assert t.name is not None
        obj = store.get(res, ns, t.name)
        if "as=Table" in request.headers.get("Accept", ""):
            return respond(tables.table(res, [obj], str(store.rv), twin.sim.now))
        return respond(obj)
    body = await body_of(request)
    dry = dry_run_of(request, body)
    if method == "POST" and t.name is None:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "create needs an object")
        obj = store.create(res, ns, deep(body), dry_run=dry)
        twin.after_write(dry)
        return respond(obj, 201)
    if t.name is None:
        raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed on a collection")
    if method == "PUT":
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "update needs an object")
        obj = store.replace(res, ns, t.name, deep(body), dry_run=dry)
        twin.after_write(dry)
        return respond(obj)
    if method == "PATCH":
        old = store.get(res, ns, t.name)
        new = patched(request, old, body)
        obj = store.replace(res, ns, t.name, new, dry_run=dry)
        twin.after_write(dry)
        return respond(obj)
    if method == "DELETE":
        old = store.get(res, ns, t.name)
        if res is POD and t.namespace is not None and t.name in twin.mirror.pods:
            store.hooks_only(res, old, dry)  # the replica terminates; the pod goes when it exits
            twin.after_write(dry)
            return respond(store.get(res, ns, t.name) if store.find(res, ns, t.name) else old)
        if res is POD and ns == nodes.SYSTEM:
            return respond(old)  # a DaemonSet pod comes straight back
        obj = store.delete(res, ns, t.name, dry_run=dry)
        return respond(obj)
    raise ApiError(405, "MethodNotAllowed", f"{method} is not allowed")


def patched(request: web.Request, old: Obj, body: Any) -> Obj:
    ctype = request.headers.get("Content-Type", patches.MERGE)
    try:
        new = patches.apply(ctype, deep(old), body)
    except patches.PatchError as exc:
        raise ApiError(422, "Invalid", str(exc)) from exc
    if not isinstance(new, dict):
        raise ApiError(422, "Invalid", "the patch did not leave an object")
    sent = (
        (body or {}).get("metadata", {}).get("resourceVersion") if isinstance(body, dict) else None
    )
    new.setdefault("metadata", {})
    if sent is None:  # a patch without a resourceVersion applies to the latest version
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
    return new


async def subresource(twin: TwinParts, request: web.Request, t: Target) -> web.StreamResponse:
    store = twin.store
    res, ns, name = t.res, t.namespace or "", t.name
    assert name is not None
    if t.sub == "scale" and "scale" in res.subresources:
        obj = store.get(res, ns, name)
        if request.method == "GET":
            return respond(scale_of(obj))
        body = await body_of(request)
        dry = dry_run_of(request, body)
        scale = scale_of(obj)
        if request.method == "PATCH":
            new_scale = patched(request, scale, body)
        elif request.method == "PUT" and isinstance(body, dict):
            new_scale = body
        else:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} on scale")
        sent = new_scale.get("metadata", {}).get("resourceVersion")
        replicas = new_scale.get("spec", {}).get("replicas")
        new = deep(obj)
        new["spec"]["replicas"] = replicas
        new["metadata"]["resourceVersion"] = sent or obj["metadata"]["resourceVersion"]
        updated = store.replace(res, ns, name, new, dry_run=dry)
        twin.after_write(dry)
        if not dry:
            updated = store.get(res, ns, name)
        return respond(scale_of(updated))
    if t.sub == "status" and "status" in res.subresources:
        obj = store.get(res, ns, name)
        if request.method == "GET":
            return respond(obj)
        body = await body_of(request)
        dry = dry_run_of(request, body)
        new = patched(request, obj, body) if request.method == "PATCH" else deep(body)
        new["spec"] = obj.get("spec")  # the status subresource changes only the status
        return respond(store.replace(res, ns, name, new, dry_run=dry))
    if t.sub == "eviction" and res is POD and request.method == "POST":
        body = await body_of(request)
        dry = dry_run_of(request, body)
        return respond(evict(twin, ns, name, dry), 201)
    raise ApiError(404, "NotFound", f"the server could not find the requested resource ({t.sub})")


def scale_of(obj: Obj) -> Obj:
    meta = obj["metadata"]
    sel = obj["spec"].get("selector", {}).get("matchLabels") or {
        "steward.dev/workload": meta["name"]
    }
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": obj["spec"].get("replicas", 0)},
        "status": {
            "replicas": obj.get("status", {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sel.items()),
        },
    }


def evict(twin: TwinParts, ns: str, name: str, dry: bool) -> Obj:
    store = twin.store
    pod = store.find(POD, ns, name)
    if pod is None:
        raise not_found(POD, name)
    if "deletionTimestamp" not in pod["metadata"]:
        for pdb in store.select(PDB, ns, lambda _o: True, lambda _o: True):
            sel = pdb.get("spec", {}).get("selector", {}).get("matchLabels", {})
            labels = pod["metadata"].get("labels", {})
            if not sel or not matches(labels, sel):
                continue
            if pdb.get("status", {}).get("disruptionsAllowed", 0) <= 0:
                raise ApiError(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    {
                        "causes": [
                            {
                                "reason": "DisruptionBudget",
                                "message": f"The disruption budget {pdb['metadata']['name']} needs "
                                f"{pdb['status'].get('desiredHealthy', 0)} healthy pods and "
                                f"has {pdb['status'].get('currentHealthy', 0)} currently",
                            }
                        ]
                    },
                )
        if ns == nodes.SYSTEM:
            pass  # a DaemonSet pod: kubelet would restart it in place
        elif name in twin.mirror.pods:
            store.hooks_only(POD, pod, dry)
            twin.after_write(dry)
        elif not dry:
            store.remove(POD, ns, name)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


async def watch(
    twin: TwinParts,
    request: web.Request,
    res: Resource,
    *,
    namespace: str | None,
    labels: Any,
    fields: Any,
) -> web.StreamResponse:
    store = twin.store
    rv_text = request.query.get("resourceVersion", "")
    bookmarks = request.query.get("allowWatchBookmarks") in ("true", "1")
    timeout = float(request.query.get("timeoutSeconds") or 1800)
    watcher = Watcher(res, namespace, labels, fields)
    if rv_text in ("", "0"):
        initial = [("ADDED", o) for o in store.select(res, namespace, labels, fields)]
        error: ApiError | None = None
    else:
        try:
            initial = [
                (e.type, e.obj)
                for e in store.since(res, namespace, int(rv_text))
                if labels(e.obj) and fields(e.obj)
            ]
            error = None
        except ApiError as exc:
            initial, error = [], exc
        except ValueError:
            raise ApiError(400, "BadRequest", f"invalid resourceVersion {rv_text!r}") from None
    store.watchers.append(watcher)  # no await since the history was read: nothing is missed
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    try:
        await resp.prepare(request)
        if error is not None:
            await _send(resp, {"type": "ERROR", "object": error.status()})
            return resp
        for kind, obj in initial:
            await _send(resp, {"type": kind, "object": obj})
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while not twin.stopping:
            left = end - loop.time()
            if left <= 0:
                break
            try:
                item = await asyncio.wait_for(watcher.queue.get(), min(left, BOOKMARK_S))
            except TimeoutError:
                if await _held(twin, request):
                    break
                if bookmarks:
                    await _send(
                        resp,
                        {
                            "type": "BOOKMARK",
                            "object": {
                                "kind": res.kind,
                                "apiVersion": res.api_version,
                                "metadata": {"resourceVersion": str(store.rv)},
                            },
                        },
                    )
                continue
            if item is None or await _held(twin, request):
                break
            await _send(resp, {"type": item[0], "object": item[1]})
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        store.watchers.remove(watcher)
    return resp


async def _send(resp: web.StreamResponse, event: Obj) -> None:
    await resp.write(json.dumps(event).encode() + b"\n")


async def _held(twin: TwinParts, request: web.Request) -> bool:
    """Whether a watch's client was cut off (then its connection is gone: the watch ends)."""
    try:
        await twin.partitions.hold(request)
    except Dropped:
        return True
    return False
