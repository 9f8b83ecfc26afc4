"""`NodeOps`: what the Kubernetes backend does to nodes — cordon, uncordon and drain — and the
room its nodes have for more replicas.

Cordon and uncordon patch `spec.unschedulable` (a cordoned node's field removed again, as
`kubectl uncordon` does) and Steward's mark on its own cordons (`steward.dev/cordoned-by`); a
drain cordons, then evicts through the Eviction API on a thread of its own (drain.py), so that
`start_drain` returns at once and `drain_status` reads from the pod cache how many pods are
left. Every mutating call carries `dryRun=All` when `dry_run` is set.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tools.backends.base import ActionResult, DrainProgress, DrainResult
from tools.backends.kubernetes import contract as c
from tools.backends.kubernetes.drain import Drainer, skipped
from tools.backends.kubernetes.errors import DRY_RUN, Caller, write_options
from tools.backends.kubernetes.objects import owner_workload, pod_gpus, staying, template_of
from tools.errors import InvalidInput
from tools.labels import matches

Obj = dict[str, Any]

SETTLE_S = 5.0
"""How long a scale-up that finds no room waits for a scale-down already written to free its
cards: a workload's controller marks the pods it removes a moment after the scale is written
(on the twin, its watch event a few milliseconds later)."""


class NodeOps:
    """Cordons and drains on the API server; the caches (`nodes`, `pods`: name -> object, as
    the watches have them) say what is there, `desired` how many pods each managed workload
    asks for ("namespace/name" -> replicas x pods per replica), `catch_up` waits until a write
    is seen."""

    def __init__(
        self,
        core: client.CoreV1Api,
        call: Caller,
        *,
        nodes: Callable[[], dict[str, Obj]],
        pods: Callable[[], dict[str, Obj]],
        desired: Callable[[], dict[str, int]],
        catch_up: Callable[[str, Any], None],
        timeout: float,
        eviction_retry_s: float,
    ) -> None:
        self.core = core
        self.call = call
        self._nodes = nodes
        self._pods = pods
        self._desired = desired
        self._catch_up = catch_up
        self.timeout = timeout
        self.drainer = Drainer(self._pods_on, self._evict, self._pod_exists, eviction_retry_s)

    def node(self, node: str) -> Obj:
        found = self._nodes().get(node)
        if found is None:
            known = ", ".join(sorted(self._nodes())[:20])
            raise InvalidInput(f"no node named {node!r} (known: {known})")
        return found

    def set_unschedulable(self, node: str, value: bool, dry_run: bool) -> ActionResult:
        """Cordon (`value` True) or uncordon `node`; a node already so is left alone."""
        obj = self.node(node)
        verb = "cordon" if value else "uncordon"
        if bool((obj.get("spec") or {}).get("unschedulable")) == value:
            state = "cordoned" if value else "schedulable"
            return ActionResult(ok=True, dry_run=dry_run, message=f"{node} already {state}")
        kw = write_options(self.timeout, dry_run)
        # Steward's own cordon says so on the node (a person's `kubectl cordon` does not).
        body = {
            "metadata": {"annotations": {c.CORDONED_BY: c.STEWARD if value else None}},
            "spec": {"unschedulable": True if value else None},
        }
        written = self.call(lambda: self.core.patch_node(node, body, **kw), "patch", "nodes")
        if not dry_run:
            self._catch_up("nodes", written)
        return ActionResult(
            ok=True,
            dry_run=dry_run,
            changed=not dry_run,
            message=f"would {verb} {node}" if dry_run else f"{verb}ed {node}",
        )

    def room(self, kind: str, obj: Obj, extra: int) -> str | None:
        """Whether `extra` more replicas can be scheduled, by nvidia.com/gpu: nodes the pod
        template selects, schedulable, with free allocatable (pods terminating will free
        theirs). A Pending replica that can never start is the trap to avoid.

        The cards a decision's earlier scale-down gives back are free only once that
        workload's controller has marked its pods for deletion, a moment after the write: while
        some workload has more pods than it asks for, a refusal is looked at again, for up to
        SETTLE_S, before it stands."""
        deadline = time.monotonic() + SETTLE_S
        while (refusal := self._room(kind, obj, extra)) is not None:
            if time.monotonic() >= deadline or not self._shrinking():
                return refusal
            time.sleep(0.05)
        return None

    def _shrinking(self) -> bool:
        """Whether some managed workload has more live pods than it asks for: a scale-down its
        controller has not acted on yet, as this cache has it."""
        live: Counter[str] = Counter()
        for pod in self._pods().values():
            owner = owner_workload(pod)
            if owner and staying(pod):
                live[f"{pod['metadata'].get('namespace')}/{owner}"] += 1
        return any(live[key] > wanted for key, wanted in self._desired().items())

    def _room(self, kind: str, obj: Obj, extra: int) -> str | None:
        template, size = template_of(kind, obj)
        per_pod = pod_gpus(template)
        if per_pod == 0:
            return None
        selector = (template.get("spec") or {}).get("nodeSelector") or {}
        free: list[int] = []
        pods_by_node: dict[str, list[Obj]] = {}
        for p in self._pods().values():
            node = (p.get("spec") or {}).get("nodeName")
            if node and staying(p):
                pods_by_node.setdefault(node, []).append(p)
        for n in self._nodes().values():
            labels = n["metadata"].get("labels") or {}
            spec, status = n.get("spec") or {}, n.get("status") or {}
            if not matches(labels, selector) or spec.get("unschedulable"):
                continue
            if any(
                t.get("effect") in ("NoSchedule", "NoExecute") for t in spec.get("taints") or []
            ):
                continue
            alloc = int(str((status.get("allocatable") or {}).get(c.GPU, "0")))
            used = sum(pod_gpus(p) for p in pods_by_node.get(n["metadata"]["name"], []))
            free.append(alloc - used)
        fits = sum(max(0, f) // per_pod for f in free)
        if fits >= extra * size:
            return None
        name = obj["metadata"]["name"]
        return (
            f"no room for {extra} more replica(s) of {name}: {extra * size} pod(s) x "
            f"{per_pod} {c.GPU} wanted, {fits} fit on the nodes its selector "
            f"{selector or '{}'} matches (cordoned, tainted and full nodes excluded)"
        )

    def start_drain(self, node: str, deadline_s: float, dry_run: bool) -> DrainResult:
        """Cordon and start evicting; returns at once (`drain_status` says how it goes)."""
        self._check_deadline(node, deadline_s)
        cordon = self.set_unschedulable(node, True, dry_run)
        st = self.drainer.start(node, deadline_s, dry_run)
        return DrainResult(
            ok=True,
            dry_run=dry_run,
            changed=cordon.changed,
            outcome="drained",
            message=f"draining {node}: {len(st.pending)} pod(s) to evict",
        )

    def drain_status(self, node: str) -> DrainProgress:
        """Pods still bound to the node (DaemonSet and mirror pods aside), from the cache."""
        self.node(node)
        left = [p for p in self._pods_on(node) if skipped(p) is None]
        st = self.drainer.states.get(node)
        note = ""
        if st is not None and st.pending:
            note = f"; {len(st.pending)} eviction(s) refused so far by a disruption budget"
        if st is not None and st.error:
            note += f"; {st.error}"
        return DrainProgress(
            node=node,
            replicas_left=len(left),
            in_flight=0,
            message=f"{len(left)} pod(s) left on {node}{note}",
        )

    def drain(self, node: str, deadline_s: float, dry_run: bool) -> DrainResult:
        """Cordon and evict until the node is empty or the deadline passes (blocking)."""
        self._check_deadline(node, deadline_s)
        self.set_unschedulable(node, True, dry_run)
        st = self.drainer.run(node, deadline_s, dry_run)
        if st.outcome == "failed":
            return DrainResult(
                ok=False, dry_run=dry_run, outcome="failed", message=f"drain {node}: {st.error}"
            )
        names = ", ".join(st.evicted) or "nothing"
        left = (
            f"; not evicted by the deadline (budget): {', '.join(st.pending)}" if st.pending else ""
        )
        verb = "would evict" if dry_run else "evicted"
        return DrainResult(
            ok=True,
            dry_run=dry_run,
            changed=not dry_run,
            outcome="drained" if st.outcome == "drained" else "deadline",
            message=f"drain {node}: {verb} {names}{left}",
        )

    def _check_deadline(self, node: str, deadline_s: float) -> None:
        self.node(node)
        if deadline_s <= 0:
            raise InvalidInput(f"drain {node}: deadline_s must be > 0, got {deadline_s}")

    def _pods_on(self, node: str) -> list[Obj]:
        return [p for p in self._pods().values() if (p.get("spec") or {}).get("nodeName") == node]

    def _pod_exists(self, ns: str, name: str) -> bool:
        return f"{ns}/{name}" in self._pods()

    def _evict(self, ns: str, name: str, dry_run: bool) -> bool:
        body: Obj = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns},
        }
        if dry_run:
            body["deleteOptions"] = {"dryRun": [DRY_RUN]}

        def once() -> bool:
            try:
                kw = write_options(self.timeout, dry_run)
                self.core.create_namespaced_pod_eviction(name, ns, body, **kw)  # type: ignore[arg-type]
            except ApiException as exc:
                if exc.status == 429 and "disruption budget" in (exc.body or ""):
                    return False  # the budget, not the server: the drain asks again later
                raise
            return True

        return self.call(once, "create", "pods/eviction", ns)
