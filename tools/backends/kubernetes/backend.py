"""`KubernetesCluster`: the Cluster protocol on a real cluster, through the official client.

Reads come from watch caches (cache.py) and are built into a ClusterState (observe.py);
writes go to the API server: scale through the scale subresource (read, then a patch carrying the
read resourceVersion: a 409 re-reads and tries again), placement as a placement request on the
workload (`steward.dev/place`, see docs/kubernetes.md), cordon and uncordon as a patch of
`spec.unschedulable` and drain through the Eviction API (nodes.py), the gateway switch as the
`steward.dev/accepting` annotation, and the probe as a real OpenAI-compatible request to the
workload's endpoint. Every mutating call carries `dryRun=All` when `dry_run` is set, so a plan
is validated by the API server and changes nothing.
"""

from __future__ import annotations

import atexit
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from kubernetes import client

from tools.backends.base import ActionResult, DrainProgress, DrainResult, ProbeResult
from tools.backends.kubernetes import contract as c
from tools.backends.kubernetes import endpoint
from tools.backends.kubernetes.cache import Watched
from tools.backends.kubernetes.connect import api_client
from tools.backends.kubernetes.errors import Caller, write_options
from tools.backends.kubernetes.nodes import NodeOps
from tools.backends.kubernetes.objects import template_of
from tools.backends.kubernetes.observe import Builder
from tools.backends.kubernetes.settings import KubernetesSettings
from tools.errors import ActionFailed, InvalidInput
from tools.model import ClusterState, Link

T = TypeVar("T")
Obj = dict[str, Any]
LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
WORKLOADS = (
    ("deployments", "Deployment"),
    ("statefulsets", "StatefulSet"),
    ("leaderworkersets", "LeaderWorkerSet"),
)
"""The caches of the workload kinds Steward manages, with their kinds."""


class KubernetesCluster:
    """See the module docstring. `start()` (or the first observe) fills the caches."""

    def __init__(
        self,
        settings: KubernetesSettings,
        *,
        api: client.ApiClient | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings
        self.now = now or (lambda: datetime.now(UTC))
        """When an observation is taken: the wall clock (a test may give the twin's)."""
        self.ns = settings.namespace
        self.api = api or api_client(settings)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.policy = client.PolicyV1Api(self.api)
        self.resource = client.ResourceV1Api(self.api)
        self.call = Caller(settings.retry_attempts, settings.retry_max_wait_s)
        self.timeout = settings.request_timeout_s
        self.builder = Builder(self.ns)
        self.caches: dict[str, Watched] = {}
        self._started = False
        self.nodes = NodeOps(
            self.core,
            self.call,
            nodes=self._nodes,
            pods=lambda: self._snap("pods"),
            desired=self._desired_pods,
            catch_up=self._catch_up,
            timeout=self.timeout,
            eviction_retry_s=settings.eviction_retry_s,
        )

    def __str__(self) -> str:
        return f"Kubernetes cluster at {self.api.configuration.host} (namespace {self.ns})"

    # -- caches -----------------------------------------------------------------------------

    def _optional(self, probe: Callable[[], object]) -> bool:
        """Whether an optional API (LeaderWorkerSet, DRA) is served here."""
        try:
            self.call(probe, "list", "optional API")
        except InvalidInput:
            return False
        return True

    def start(self) -> None:
        if self._started:
            return
        t = self.timeout
        managed = f"{c.MANAGED}=true"
        ns = self.ns
        specs: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
            "nodes": (self.core.list_node, {}),
            "pods": (self.core.list_pod_for_all_namespaces, {}),
            "deployments": (
                self.apps.list_namespaced_deployment,
                {"namespace": ns, "label_selector": managed},
            ),
            "statefulsets": (
                self.apps.list_namespaced_stateful_set,
                {"namespace": ns, "label_selector": managed},
            ),
            "configmaps": (
                self.core.list_namespaced_config_map,
                {
                    "namespace": ns,
                    "field_selector": f"metadata.name={self.settings.topology_configmap}",
                },
            ),
        }
        if self._optional(
            lambda: self.custom.list_namespaced_custom_object(
                *LWS[:2], ns, LWS[2], limit=1, _request_timeout=t
            )
        ):
            specs["leaderworkersets"] = (self._list_lws, {"label_selector": managed})
        if self._optional(lambda: self.resource.list_resource_slice(limit=1, _request_timeout=t)):
            specs["resourceslices"] = (self.resource.list_resource_slice, {})
        for name, (fn, kw) in specs.items():
            self.caches[name] = Watched(name, self.api, fn, **kw)
        atexit.register(self.close)
        for w in self.caches.values():
            w.start()
        for w in self.caches.values():
            w.wait_synced(self.settings.sync_timeout_s)
        self._started = True

    def _list_lws(self, **kwargs: Any) -> object:
        return self.custom.list_namespaced_custom_object(*LWS[:2], self.ns, LWS[2], **kwargs)

    def close(self) -> None:
        """Stop the watches (also at exit)."""
        for w in self.caches.values():
            w.stop()
        atexit.unregister(self.close)

    @property
    def lists(self) -> int:
        """Full lists made so far by all the caches (one each after start, unless relisted)."""
        return sum(w.lists for w in self.caches.values())

    def _snap(self, name: str) -> dict[str, Obj]:
        w = self.caches.get(name)
        return w.snapshot()[1] if w is not None else {}

    def _catch_up(self, cache: str, written: Any) -> None:
        """Wait until `cache` has seen our write (read your own writes, within a second)."""
        meta = (
            written.get("metadata")
            if isinstance(written, dict)
            else getattr(written, "metadata", None)
        )
        rv = (
            meta.get("resourceVersion")
            if isinstance(meta, dict)
            else getattr(meta, "resource_version", None)
        )
        w = self.caches.get(cache)
        if w is not None and rv and str(rv).isdigit():
            w.wait_rv(int(rv), 1.0)

    # -- observe ----------------------------------------------------------------------------

    def observe(self) -> ClusterState:
        """The cluster as the caches have it: only what changed since the last call is read."""
        self.start()
        b = self.builder
        feeds: dict[str, Callable[[dict[str, Obj] | None, dict[str, Obj | None]], None]] = {
            "nodes": b.feed_nodes,
            "resourceslices": b.feed_slices,
            "pods": b.feed_pods,
            "configmaps": b.feed_topology,
            "deployments": lambda f, d: b.feed_workloads("Deployment", f, d),
            "statefulsets": lambda f, d: b.feed_workloads("StatefulSet", f, d),
            "leaderworkersets": lambda f, d: b.feed_workloads("LeaderWorkerSet", f, d),
        }
        for name, feed in feeds.items():
            cache = self.caches.get(name)
            if cache is not None:
                feed(*cache.changes())
        return b.build(self.now())

    # -- workloads --------------------------------------------------------------------------

    def _workload(self, name: str) -> tuple[str, Obj]:
        self.start()
        for cache, kind in WORKLOADS:
            found = self._snap(cache).get(f"{self.ns}/{name}")
            if found is not None:
                return kind, found
        known = sorted(k.split("/", 1)[1] for cache, _ in WORKLOADS for k in self._snap(cache))
        raise InvalidInput(
            f"no workload named {name!r} in namespace {self.ns} labelled {c.MANAGED}=true "
            f"(known: {', '.join(known) or 'none'})"
        )

    def _desired_pods(self) -> dict[str, int]:
        """The pods each managed workload asks for (replicas x pods per replica), by
        "namespace/name" as the caches key them."""
        out: dict[str, int] = {}
        for cache, kind in WORKLOADS:
            for key, obj in self._snap(cache).items():
                _, size = template_of(kind, obj)
                out[key] = int((obj.get("spec") or {}).get("replicas") or 0) * size
        return out

    def _read_scale(self, kind: str, name: str) -> Obj:
        t = self.timeout
        if kind == "Deployment":
            s = self.apps.read_namespaced_deployment_scale(name, self.ns, _request_timeout=t)
        elif kind == "StatefulSet":
            s = self.apps.read_namespaced_stateful_set_scale(name, self.ns, _request_timeout=t)
        else:
            found: Obj = self.custom.get_namespaced_custom_object_scale(  # type: ignore[assignment]
                *LWS[:2], self.ns, LWS[2], name, _request_timeout=t
            )
            return found
        out: Obj = self.api.sanitize_for_serialization(s)  # type: ignore[no-untyped-call]
        return out

    def _patch_scale(self, kind: str, name: str, body: Obj, dry_run: bool) -> Obj:
        """A merge patch of the scale subresource; with the resourceVersion it was read at in
        the patch, the API server refuses it (409) if the workload changed in between."""
        kw = write_options(self.timeout, dry_run)
        if kind == "Deployment":
            r = self.apps.patch_namespaced_deployment_scale(name, self.ns, body, **kw)
        elif kind == "StatefulSet":
            r = self.apps.patch_namespaced_stateful_set_scale(name, self.ns, body, **kw)
        else:
            found: Obj = self.custom.patch_namespaced_custom_object_scale(  # type: ignore[assignment]
                *LWS[:2], self.ns, LWS[2], name, body, **kw
            )
            return found
        out: Obj = self.api.sanitize_for_serialization(r)  # type: ignore[no-untyped-call]
        return out

    def scale(self, workload: str, replicas: int, *, dry_run: bool = False) -> ActionResult:
        if replicas < 0:
            raise InvalidInput(f"scale {workload}: replicas must be >= 0, got {replicas}")
        kind, obj = self._workload(workload)
        before = int((obj.get("spec") or {}).get("replicas") or 0)
        if replicas == before:
            return ActionResult(ok=True, dry_run=dry_run, message=f"{workload} already at {before}")
        if replicas > before:
            refusal = self.nodes.room(kind, obj, replicas - before)
            if refusal is not None:
                return ActionResult(ok=False, dry_run=dry_run, message=refusal)

        def attempt() -> Obj:
            scale = self._read_scale(kind, workload)  # re-read on every try: fresh resourceVersion
            rv = (scale.get("metadata") or {}).get("resourceVersion")
            body = {"metadata": {"resourceVersion": rv}, "spec": {"replicas": replicas}}
            return self._patch_scale(kind, workload, body, dry_run)

        written = self.call(attempt, "patch", f"{kind.lower()}s/scale", self.ns)
        verb = "would scale" if dry_run else "scaled"
        if not dry_run:
            self._catch_up(_cache_of(kind), written)
        return ActionResult(
            ok=True,
            dry_run=dry_run,
            changed=not dry_run,
            message=f"{verb} {workload} {before} -> {replicas} (scale subresource of {kind} "
            f"{self.ns}/{workload})",
        )

    def place(
        self, workload: str, node: str, gpus: tuple[str, ...] = (), *, dry_run: bool = False
    ) -> ActionResult:
        kind, _ = self._workload(workload)
        if node not in self._snap("nodes"):
            raise InvalidInput(f"place {workload}: no node named {node!r}")
        request = f"{uuid.uuid4().hex[:12]}={node}" + (f":{','.join(gpus)}" if gpus else "")
        body = {"metadata": {"annotations": {c.PLACE: request}}}
        try:
            written = self.call(
                lambda: self._patch_workload(kind, workload, body, dry_run),
                "patch",
                f"{kind.lower()}s",
                self.ns,
            )
        except ActionFailed as exc:  # 422: the placement was refused (no room there)
            return ActionResult(ok=False, dry_run=dry_run, message=str(exc))
        if not dry_run:
            self._catch_up(_cache_of(kind), written)
        verb = "would start" if dry_run else "asked for"
        return ActionResult(
            ok=True,
            dry_run=dry_run,
            changed=not dry_run,
            message=f"{verb} a replica of {workload} on {node}",
        )

    def _patch_workload(self, kind: str, name: str, body: Obj, dry_run: bool) -> Any:
        kw = write_options(self.timeout, dry_run)
        if kind == "Deployment":
            return self.apps.patch_namespaced_deployment(name, self.ns, body, **kw)
        if kind == "StatefulSet":
            return self.apps.patch_namespaced_stateful_set(name, self.ns, body, **kw)
        return self.custom.patch_namespaced_custom_object(
            *LWS[:2], self.ns, LWS[2], name, body, **kw
        )

    def set_accepting(
        self, workload: str, accepting: bool, *, dry_run: bool = False
    ) -> ActionResult:
        kind, obj = self._workload(workload)
        word = "open" if accepting else "closed"
        closed = (obj["metadata"].get("annotations") or {}).get(c.ACCEPTING) == "false"
        if closed != accepting:
            return ActionResult(
                ok=True, dry_run=dry_run, message=f"{workload}'s gateway already {word}"
            )
        body = {"metadata": {"annotations": {c.ACCEPTING: None if accepting else "false"}}}
        written = self.call(
            lambda: self._patch_workload(kind, workload, body, dry_run),
            "patch",
            f"{kind.lower()}s",
            self.ns,
        )
        if not dry_run:
            self._catch_up(_cache_of(kind), written)
        verb = "would set" if dry_run else "set"
        return ActionResult(
            ok=True,
            dry_run=dry_run,
            changed=not dry_run,
            message=f"{verb} {workload}'s gateway {word}",
        )

    # -- nodes (nodes.py) --------------------------------------------------------------------

    def _nodes(self) -> dict[str, Obj]:
        self.start()
        return self._snap("nodes")

    def cordon(self, node: str, *, dry_run: bool = False) -> ActionResult:
        return self.nodes.set_unschedulable(node, True, dry_run)

    def uncordon(self, node: str, *, dry_run: bool = False) -> ActionResult:
        return self.nodes.set_unschedulable(node, False, dry_run)

    def start_drain(self, node: str, deadline_s: float, *, dry_run: bool = False) -> DrainResult:
        """Cordon and start evicting; returns at once (drain_status says how it goes)."""
        return self.nodes.start_drain(node, deadline_s, dry_run)

    def drain_status(self, node: str) -> DrainProgress:
        return self.nodes.drain_status(node)

    def drain(self, node: str, deadline_s: float, *, dry_run: bool = False) -> DrainResult:
        return self.nodes.drain(node, deadline_s, dry_run)

    # -- serving ----------------------------------------------------------------------------

    def in_flight(self, workload: str) -> int:
        """Requests running now, from the endpoint's vLLM metrics (num_requests_running)."""
        _, obj = self._workload(workload)
        return endpoint.running_requests(workload, endpoint.url_of(obj, self.ns), self.timeout)

    def probe(self, workload: str, *, dry_run: bool = False) -> ProbeResult:
        """A real chat completion through the workload's endpoint (a probe changes nothing)."""
        _, obj = self._workload(workload)
        ready = int((obj.get("status") or {}).get("readyReplicas") or 0)
        model = (obj["metadata"].get("annotations") or {}).get(c.MODEL, workload)
        url = endpoint.url_of(obj, self.ns)
        return endpoint.probe(workload, url, model, ready=ready, timeout=self.timeout)

    def link_status(self, link: str) -> Link:
        found = next((lk for lk in self.observe().links if lk.name == link), None)
        if found is None:
            raise InvalidInput(f"no link named {link!r}")
        return found


def _cache_of(kind: str) -> str:
    return {"Deployment": "deployments", "StatefulSet": "statefulsets"}.get(
        kind, "leaderworkersets"
    )
