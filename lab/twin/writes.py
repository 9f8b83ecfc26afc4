"""What a client's write does to the simulated cluster: the twin's controllers, in one place.

The store calls `Writes.hook` before committing a client's write (and on a dry run, to
validate it): scaling a workload sets the simulator's desired replicas (replicas that do not
fit stay Pending, as on a real cluster), `spec.unschedulable` cordons or uncordons the node,
the `steward.dev/accepting` annotation opens or closes the workload's gateway, a
`steward.dev/place` annotation starts one replica on a named node (a placement request, done
once per request id), and deleting or evicting a pod terminates its replica (its controller
then starts a replacement). The mirror then writes the simulator's truth back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lab.sim import control, lifecycle
from lab.sim.snapshot import CLOSED
from lab.twin import mirror as m
from lab.twin.resources import NODE, POD, Resource
from lab.twin.store import ApiError, Obj
from tools.backends.kubernetes.contract import CORDONED_BY, STEWARD
from tools.errors import InvalidInput

if TYPE_CHECKING:
    from lab.twin.mirror import Mirror

PLACE = "steward.dev/place"
"""Annotation `REQUEST-ID=NODE[:GPU,GPU]`: start one replica there (the twin's scheduler hint)."""


class Writes:
    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        self.sim = mirror.sim
        self.placed: set[str] = set()

    def workload_of(self, res: Resource, name: str) -> str | None:
        spec = self.sim.engine.specs.get(name)
        if spec is None or m.workload_resource(spec) is not res:
            return None
        return name

    def hook(self, res: Resource, old: Obj | None, new: Obj | None, dry_run: bool) -> None:
        if old is None or new is None:
            if old is not None and res is POD:
                self.delete_pod(old, dry_run)
            return
        if res is NODE:
            self._node(old, new, dry_run)
            return
        workload = self.workload_of(res, old["metadata"]["name"])
        if workload is not None and old["metadata"].get("namespace") == self.mirror.namespace:
            self._workload(workload, old, new, dry_run)

    def _node(self, old: Obj, new: Obj, dry_run: bool) -> None:
        was = bool(old.get("spec", {}).get("unschedulable"))
        now = bool(new.get("spec", {}).get("unschedulable"))
        if was != now:
            # Who cordons: Steward marks its own cordons; `kubectl cordon` (a person) does not.
            mine = (new["metadata"].get("annotations") or {}).get(CORDONED_BY) == STEWARD
            name = old["metadata"]["name"]
            _ok(control.set_cordon(self.sim.engine, name, now, dry_run, by_steward=mine))

    def _workload(self, name: str, old: Obj, new: Obj, dry_run: bool) -> None:
        replicas = new.get("spec", {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise ApiError(
                422,
                "Invalid",
                f"spec.replicas: Invalid value: {replicas!r}: must be greater than or equal to 0",
            )
        eng = self.sim.engine
        run = eng.state.workloads[name]
        if replicas != old.get("spec", {}).get("replicas") and not dry_run:
            run.desired = replicas  # as a Deployment does: pods that do not fit stay Pending
            lifecycle.reconcile(eng, name, run, eng.state.t)
            eng.dirty_workloads.add(name)
            eng.version += 1
        notes_old = old["metadata"].get("annotations") or {}
        notes_new = new["metadata"].get("annotations") or {}
        closed_old = notes_old.get(CLOSED) == "false"
        closed_new = notes_new.get(CLOSED) == "false"
        if closed_old != closed_new:
            _ok(control.set_accepting(eng, name, not closed_new, dry_run))
        place = notes_new.get(PLACE)
        if place and place != notes_old.get(PLACE):
            self._place(name, place, dry_run)

    def _place(self, name: str, value: str, dry_run: bool) -> None:
        request, _, where = value.partition("=")
        node, _, gpus = where.partition(":")
        if not request or not node:
            raise ApiError(
                422, "Invalid", f"{PLACE}: want REQUEST-ID=NODE[:GPU,...], got {value!r}"
            )
        if request in self.placed:
            return  # the same request again (a retry): done once
        result = _ok(
            control.place(
                self.sim.engine, name, node, tuple(g for g in gpus.split(",") if g), dry_run
            )
        )
        if result and not dry_run:
            self.placed.add(request)

    def delete_pod(self, pod: Obj, dry_run: bool) -> None:
        """Terminate the replica a pod belongs to (a grace period, as kubelet gives)."""
        found = self.mirror.pods.get(pod["metadata"]["name"])
        if found is None or dry_run:
            return
        workload, index = found
        eng = self.sim.engine
        run = eng.state.workloads[workload]
        r = next((r for r in run.replicas if r.index == index), None)
        if r is None or r.phase == "terminating":
            return
        t = eng.state.t
        if r.phase == "unreachable":
            eng.placer.release(r)
            run.replicas.remove(r)
            lifecycle.recount(run)
        else:
            lifecycle.terminate(eng, run, r, t, t + 120.0)
        eng.dirty_workloads.add(workload)
        eng.dirty_nodes.update(r.nodes)
        eng.version += 1


def _ok(result: Any) -> bool:
    """Turn a refused simulator action into the API's 422; InvalidInput into 404/422."""
    if not result.ok:
        raise ApiError(422, "Invalid", result.message)
    return bool(result.changed)


def guard(call: Any) -> Any:
    try:
        return call()
    except InvalidInput as exc:
        raise ApiError(422, "Invalid", str(exc)) from exc
