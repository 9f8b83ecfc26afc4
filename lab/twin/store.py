"""The twin's object store: every API object, one global resourceVersion, and watch history.

Like etcd behind the API server: each write takes the next resourceVersion (one counter for
all kinds), an update carrying a stale resourceVersion is a 409 Conflict, and every change is
kept in a bounded history so a watch can resume from any version still in it; older than that
it is 410 Gone. Objects are plain JSON dicts in the shapes of the Kubernetes OpenAPI.

All of it runs on the server's event loop thread: no locks. Writes made on behalf of the
simulator (`upsert`, `remove`) skip the conflict check, as a controller's status writes
would not conflict with spec writes on a real cluster either.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lab.twin.resources import Resource
from lab.twin.selectors import Match

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (group/plural, namespace, name)
HISTORY = 50_000
"""Watch events kept; a watch from before the oldest of them gets 410 Gone."""


class ApiError(Exception):
    """An API error answered as a `Status` object."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(res: Resource, name: str) -> ApiError:
    what = f"{res.plural}.{res.group}" if res.group else res.plural
    return ApiError(
        404, "NotFound", f'{what} "{name}" not found', {"name": name, "kind": res.plural}
    )


def rfc3339(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Watcher:
    res: Resource
    namespace: str | None
    labels: Match
    fields: Match
    queue: asyncio.Queue[tuple[str, Obj] | None] = field(default_factory=asyncio.Queue)


@dataclass(slots=True)
class Event:
    rv: int
    res_key: str
    namespace: str
    type: str
    obj: Obj


WriteHook = Callable[[Resource, Obj | None, Obj | None, bool], None]
"""Called before a client's write: (resource, old, new, dry_run); raise ApiError to refuse."""


class Store:
    """Objects by resource, namespace and name (see the module docstring)."""

    def __init__(self, now: Callable[[], datetime]) -> None:
        self.now = now
        self.rv = 1
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self.history: deque[Event] = deque(maxlen=HISTORY)
        self.watchers: list[Watcher] = []
        self.hooks: list[WriteHook] = []

    # -- reads ----------------------------------------------------------------------------------

    @staticmethod
    def res_key(res: Resource) -> str:
        return f"{res.group}/{res.plural}"

    def table(self, res: Resource) -> dict[tuple[str, str], Obj]:
        return self.objects.setdefault(self.res_key(res), {})

    def get(self, res: Resource, namespace: str, name: str) -> Obj:
        obj = self.table(res).get((namespace, name))
        if obj is None:
            raise not_found(res, name)
        return obj

    def find(self, res: Resource, namespace: str, name: str) -> Obj | None:
        return self.table(res).get((namespace, name))

    def select(
        self, res: Resource, namespace: str | None, labels: Match, fields: Match
    ) -> list[Obj]:
        return [
            obj
            for (ns, _), obj in sorted(self.table(res).items())
            if (namespace is None or ns == namespace) and labels(obj) and fields(obj)
        ]

    @property
    def oldest_rv(self) -> int:
        return self.history[0].rv if len(self.history) == self.history.maxlen else 1

    # -- client writes ------------------------------------------------------------------------

    def create(self, res: Resource, namespace: str, obj: Obj, *, dry_run: bool) -> Obj:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = (
                meta["generateName"] + hashlib.sha1(f"{self.rv}/{id(obj)}".encode()).hexdigest()[:5]
            )
        name = meta.get("name")
        if not name:
            raise ApiError(422, "Invalid", f"{res.kind} is invalid: metadata.name: Required value")
        if (namespace, name) in self.table(res):
            raise ApiError(
                409,
                "AlreadyExists",
                f'{res.plural} "{name}" already exists',
                {"name": name, "kind": res.plural},
            )
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        canonical_quantities(obj)
        if res.namespaced:
            meta["namespace"] = namespace
        meta.setdefault("uid", _uid(res, namespace, name, self.rv))
        meta["creationTimestamp"] = rfc3339(self.now())
        if "spec" in obj:
            meta["generation"] = 1
        for hook in self.hooks:
            hook(res, None, obj, dry_run)
        if dry_run:
            return {**obj, "metadata": {**meta, "resourceVersion": str(self.rv)}}
        return self._commit(res, namespace, name, obj, "ADDED")

    def replace(self, res: Resource, namespace: str, name: str, obj: Obj, *, dry_run: bool) -> Obj:
        old = self.get(res, namespace, name)
        meta = obj.setdefault("metadata", {})
        sent = meta.get("resourceVersion")
        if sent and sent != old["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {res.plural} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                {"name": name, "kind": res.plural},
            )
        if meta.get("name", name) != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        obj["apiVersion"], obj["kind"] = res.api_version, res.kind
        canonical_quantities(obj)
        for k in ("uid", "creationTimestamp", "namespace", "generation", "deletionTimestamp"):
            if k in old["metadata"]:
                meta[k] = old["metadata"][k]
        meta["name"] = name
        if "spec" in obj and obj.get("spec") != old.get("spec"):
            meta["generation"] = int(old["metadata"].get("generation", 0)) + 1
        for hook in self.hooks:
            hook(res, old, obj, dry_run)
        if dry_run:
            return {
                **obj,
                "metadata": {**meta, "resourceVersion": old["metadata"]["resourceVersion"]},
            }
        return self._commit(res, namespace, name, obj, "MODIFIED")

    def delete(self, res: Resource, namespace: str, name: str, *, dry_run: bool) -> Obj:
        old = self.get(res, namespace, name)
        for hook in self.hooks:
            hook(res, old, None, dry_run)
        if dry_run:
            return old
        return self.remove(res, namespace, name) or old

    def hooks_only(self, res: Resource, old: Obj, dry_run: bool) -> None:
        """Run the write hooks of a deletion without removing the object (graceful deletion:
        the simulator's replica terminates, and the mirror removes the pod when it exits)."""
        for hook in self.hooks:
            hook(res, old, None, dry_run)

    # -- the simulator's writes -----------------------------------------------------------------

    def upsert(self, res: Resource, namespace: str, name: str, obj: Obj) -> Obj:
        """Create or replace without a conflict check; nothing happens if nothing changed."""
        old = self.find(res, namespace, name)
        if old is not None:
            if _same(old, obj):
                return old
            meta = obj["metadata"]
            for k in ("uid", "creationTimestamp"):
                meta[k] = old["metadata"][k]
            if "generation" not in meta and "generation" in old["metadata"]:
                changed = obj.get("spec") != old.get("spec")
                meta["generation"] = int(old["metadata"]["generation"]) + int(changed)
            return self._commit(res, namespace, name, obj, "MODIFIED")
        meta = obj["metadata"]
        meta.setdefault("uid", _uid(res, namespace, name, 0))
        meta.setdefault("creationTimestamp", rfc3339(self.now()))
        if "spec" in obj:
            meta.setdefault("generation", 1)
        return self._commit(res, namespace, name, obj, "ADDED")

    def remove(self, res: Resource, namespace: str, name: str) -> Obj | None:
        old = self.table(res).pop((namespace, name), None)
        if old is None:
            return None
        self.rv += 1
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self.rv)}}
        self._publish(res, namespace, "DELETED", gone)
        return gone

    # -- internals ------------------------------------------------------------------------------

    def _commit(self, res: Resource, namespace: str, name: str, obj: Obj, kind: str) -> Obj:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.table(res)[(namespace, name)] = obj
        self._publish(res, namespace, kind, obj)
        return obj

    def _publish(self, res: Resource, namespace: str, kind: str, obj: Obj) -> None:
        key = self.res_key(res)
        self.history.append(Event(self.rv, key, namespace, kind, obj))
        for w in self.watchers:
            if self.res_key(w.res) != key or (w.namespace is not None and w.namespace != namespace):
                continue
            if w.labels(obj) and w.fields(obj):
                w.queue.put_nowait((kind, obj))

    def since(self, res: Resource, namespace: str | None, rv: int) -> list[Event]:
        """History events of a resource after `rv`; raises 410 if `rv` is too old."""
        if rv < self.oldest_rv - 1:
            raise ApiError(410, "Expired", f"too old resource version: {rv} ({self.oldest_rv - 1})")
        key = self.res_key(res)
        return [
            e
            for e in self.history
            if e.rv > rv and e.res_key == key and (namespace is None or e.namespace == namespace)
        ]


def _same(old: Obj, new: Obj) -> bool:
    """Equal but for the fields the store itself writes."""
    om, nm = old.get("metadata", {}), new.get("metadata", {})
    skip = ("resourceVersion", "uid", "creationTimestamp", "generation")
    if {k: v for k, v in om.items() if k not in skip} != {
        k: v for k, v in nm.items() if k not in skip
    }:
        return False
    return {k: v for k, v in old.items() if k != "metadata"} == {
        k: v for k, v in new.items() if k != "metadata"
    }


def _uid(res: Resource, namespace: str, name: str, salt: int) -> str:
    h = hashlib.sha1(f"{res.plural}/{namespace}/{name}/{salt}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _pod_specs(obj: Obj) -> list[Obj]:
    """The pod specs of a Pod, of a controller's template, of a LeaderWorkerSet's templates."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    found = [spec]
    templates = [spec.get("template")]
    lws = spec.get("leaderWorkerTemplate")
    if isinstance(lws, dict):
        templates += [lws.get("leaderTemplate"), lws.get("workerTemplate")]
    for template in templates:
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            found.append(template["spec"])
    return found


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


def canonical_quantities(obj: Obj) -> None:
    """Resource quantities as the API server stores them: strings (`nvidia.com/gpu: 1` in a
    manifest is answered as "1", 0.5 CPU as "500m"), which the official client's models require."""
    for pod in _pod_specs(obj):
        for key in ("containers", "initContainers"):
            for container in pod.get(key) or []:
                resources = container.get("resources") if isinstance(container, dict) else None
                for part in ("limits", "requests"):
                    amounts = (resources or {}).get(part)
                    if isinstance(amounts, dict):
                        for name, value in amounts.items():
                            amounts[name] = _quantity(value)


def deep(obj: Obj) -> Obj:
    return copy.deepcopy(obj)
