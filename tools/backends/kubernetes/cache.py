"""Watch-based caches of the API objects Steward reads: list once, then follow the changes.

Each `Watched` resource runs the client's `SharedInformer` (list, then watch from the list's
resourceVersion, with bookmarks; 410 Gone relists) on a daemon thread and keeps the objects as
plain JSON dicts (the API's own camelCase shapes), each with its resourceVersion, so a tick of
the agent costs what changed since the last one, not a relist. `lists` counts the full lists
(1 after start; more only after a 410 or a broken watch that could not resume).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.informer import ADDED, BOOKMARK, DELETED, MODIFIED, SharedInformer

from tools.errors import BackendUnavailable

Obj = dict[str, Any]


class Watched:
    """One resource kept in sync (see the module docstring)."""

    def __init__(
        self,
        name: str,
        api: ApiClient,
        list_func: Callable[..., Any],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> None:
        self.name = name
        self._api = api
        self.objects: dict[str, Obj] = {}
        self.lock = threading.Lock()
        self.version = 0
        """Bumped on every change (a reader's cue to rebuild what depends on it)."""
        self.rv = 0
        """The highest resourceVersion seen (events and bookmarks)."""
        self.lists = 0
        self.events = 0
        self.synced = threading.Event()
        self.errors: list[str] = []
        self.stopping = False
        self.thread: threading.Thread | None = None
        """The informer's thread (it runs `listing` and the event handlers): seen there, as the
        informer does not say which it is."""
        self._dirty: dict[str, Obj | None] = {}
        """Changes since the last `changes()`: key -> the object, or None if deleted."""
        self._reset = True
        """A full list happened since the last `changes()`: the reader starts over."""
        _QUIET.caches.add(self)

        def listing(**kwargs: Any) -> Any:
            """The resource's list (as plain JSON dicts) or its watch stream.

            :rtype: object
            """
            self.thread = threading.current_thread()
            # `:rtype: object` is what the client's Watch reads to decode each event: into the
            # event's own JSON dict, as for a custom object, not into the client's model. The
            # list is read as JSON too: the informer's cache then holds the very dicts this
            # cache holds, not a model of each object beside them (a 1,000-node fleet's pods
            # and resource slices are ~400,000 objects as models, which every full garbage
            # collection walks).
            if kwargs.get("watch"):
                kwargs["allow_watch_bookmarks"] = True
                return list_func(**kwargs)
            self.lists += 1
            response = list_func(**kwargs, _preload_content=False)
            try:
                body = json.loads(response.data)
            finally:
                response.release_conn()
            result = _DictList(body)
            self._replace(result.items)
            self._seen(result.metadata.resource_version)
            self.synced.set()
            return result

        self.informer = SharedInformer(  # type: ignore[no-untyped-call]
            listing,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            key_func=_key,
        )
        self.informer.add_event_handler(ADDED, self._put)  # type: ignore[no-untyped-call]
        self.informer.add_event_handler(MODIFIED, self._put)  # type: ignore[no-untyped-call]
        self.informer.add_event_handler(DELETED, self._delete)  # type: ignore[no-untyped-call]
        self.informer.add_event_handler(BOOKMARK, self._bookmark)  # type: ignore[no-untyped-call]

    def start(self) -> None:
        self.informer.start()  # type: ignore[no-untyped-call]

    def stop(self) -> None:
        """Stop watching, giving the informer's thread a moment to end (a daemon thread still
        reading when the interpreter exits can abort it).

        The informer's own `stop` joins its thread for as long as the watch stream takes to
        yield its next line (a bookmark, an event, or the server's timeout), so it runs on a
        daemon thread of its own, waited for a second at most."""
        self.stopping = True
        stopper = threading.Thread(target=self.informer.stop, name=f"stop-{self.name}", daemon=True)
        stopper.start()
        if self.thread is not threading.current_thread():
            stopper.join(1.0)

    def wait_synced(self, timeout_s: float) -> None:
        if not self.synced.wait(timeout_s):
            raise BackendUnavailable(
                f"kubernetes: the {self.name} cache did not list within {timeout_s:g} s"
            )

    def wait_rv(self, rv: int, timeout_s: float) -> bool:
        """Wait until this cache has seen resourceVersion `rv` (read your own writes)."""
        end = time.monotonic() + timeout_s
        while self.rv < rv:
            if time.monotonic() > end:
                return False
            time.sleep(0.005)
        return True

    def snapshot(self) -> tuple[int, dict[str, Obj]]:
        with self.lock:
            return self.version, dict(self.objects)

    def get(self, key: str) -> Obj | None:
        with self.lock:
            return self.objects.get(key)

    def changes(self) -> tuple[dict[str, Obj] | None, dict[str, Obj | None]]:
        """What changed since the last call: (every object, {}) after a full list, else
        (None, {key: object or None when deleted}). One reader (the state builder) drains it."""
        with self.lock:
            if self._reset:
                self._reset, self._dirty = False, {}
                return dict(self.objects), {}
            dirty, self._dirty = self._dirty, {}
            return None, dirty

    def _dict(self, obj: Any) -> Obj:
        if isinstance(obj, dict):
            return obj
        found: Obj = self._api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
        return found

    def _seen(self, rv: object) -> None:
        try:
            value = int(str(rv))
        except ValueError:
            return
        self.rv = max(self.rv, value)

    def _put(self, obj: Any) -> None:
        key = _key(obj)
        rv = _rv(obj)
        with self.lock:
            old = self.objects.get(key)
        if old is not None and rv and (old.get("metadata") or {}).get("resourceVersion") == rv:
            return  # the informer's ADDED for what the list already gave: nothing new
        d = self._dict(obj)
        with self.lock:
            self.objects[key] = d
            self._dirty[key] = d
            self.version += 1
            self.events += 1
        self._seen(d.get("metadata", {}).get("resourceVersion"))

    def _replace(self, items: list[Any]) -> None:
        """A full list: the cache is exactly its items (before the informer's own events)."""
        fresh = {_key(d): d for d in (self._dict(o) for o in items)}
        with self.lock:
            self.objects = fresh
            self.version += 1
            self._reset, self._dirty = True, {}

    def _delete(self, obj: Any) -> None:
        d = self._dict(obj)
        key = _key(d)
        with self.lock:
            self.objects.pop(key, None)
            self._dirty[key] = None
            self.version += 1
            self.events += 1
        self._seen(d.get("metadata", {}).get("resourceVersion"))

    def _bookmark(self, obj: Any) -> None:
        meta = obj.get("metadata", {}) if isinstance(obj, dict) else {}
        self._seen(meta.get("resourceVersion"))


class _QuietWhenStopped(logging.Filter):
    """The informer logs the broken watch of a cache that is being stopped as an error, with
    a traceback; that is the stop itself, not news."""

    def __init__(self) -> None:
        super().__init__()
        self.caches: weakref.WeakSet[Watched] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        thread = threading.current_thread()
        return not any(w.stopping and w.thread is thread for w in list(self.caches))


_QUIET = _QuietWhenStopped()
logging.getLogger("kubernetes.informer.informer").addFilter(_QUIET)


class _DictList:
    """A custom-object list (a dict) seen as the informer expects a list: `.items`, `.metadata`."""

    def __init__(self, body: Obj) -> None:
        self.items = body.get("items") or []
        self.metadata = _Meta(str((body.get("metadata") or {}).get("resourceVersion") or ""))


class _Meta:
    def __init__(self, rv: str) -> None:
        self.resource_version = rv


def _rv(obj: Any) -> str | None:
    if isinstance(obj, dict):
        return (obj.get("metadata") or {}).get("resourceVersion")
    meta = getattr(obj, "metadata", None)
    return getattr(meta, "resource_version", None) if meta is not None else None


def _key(obj: Any) -> str:
    if isinstance(obj, dict):
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace") or "", meta.get("name") or ""
    else:
        ns = getattr(obj.metadata, "namespace", None) or ""
        name = getattr(obj.metadata, "name", None) or ""
    return f"{ns}/{name}" if ns else str(name)
