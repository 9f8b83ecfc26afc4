"""Replica life cycles: pending -> starting -> ready -> terminating -> gone.

Like a Kubernetes Deployment, a workload has a desired replica count and the simulator
reconciles towards it: missing replicas are created pending and placed when room appears (they
then load their model for `load_s` before serving); extra ones are terminated, newest first,
pending before starting before ready. A terminating replica admits nothing new, finishes its
in-flight requests (or aborts them at its deadline), then takes `exit_s` to free its memory.
A replica on a lost node is unreachable: it serves nothing, and is evicted after EVICTION_S
unless its node comes back first (then it starts again: the process died with the node).
"""

from __future__ import annotations

from lab.sim.router import detach
from lab.sim.state import EVICTION_S, SCALE_DOWN_GRACE_S, Replica, WorkloadRun
from lab.sim.world import World

_REMOVAL_ORDER = {"pending": 0, "starting": 1, "unreachable": 2, "ready": 3}


def advance(engine: World, name: str, run: WorkloadRun, t: float) -> bool:
    """Move this workload's replicas along at time `t`; True if anything observable changed."""
    if run.ready == len(run.replicas) == run.desired:
        return False  # all serving, as many as wanted: nothing to move (the common case)
    changed = False
    for r in list(run.replicas):
        if r.phase == "starting" and t >= r.ready_at_s:
            r.phase, r.since_s = "ready", r.ready_at_s
            recount(run)
            changed = True
        elif r.phase == "terminating":
            if r.server.has_work and t >= r.deadline_s:
                aborted = r.server.abort_all()
                run.scrape.aborted += aborted
                run.series.aborted += aborted
            if not r.server.has_work:
                r.ready_at_s = min(r.ready_at_s, t + engine.specs[name].exit_s)
                if t >= r.ready_at_s:
                    _remove(engine, run, r)
                    changed = True
        elif r.phase == "unreachable" and t >= r.deadline_s:
            _remove(engine, run, r)
            changed = True
    return reconcile(engine, name, run, t) or changed


def recount(run: WorkloadRun) -> None:
    """Refresh the workload's count of ready replicas after phases changed."""
    run.ready = sum(1 for r in run.replicas if r.phase == "ready")


def reconcile(engine: World, name: str, run: WorkloadRun, t: float) -> bool:
    """Create, place or terminate replicas until the live count matches the desired one."""
    changed = False
    live = [r for r in run.replicas if r.phase != "terminating"]
    while len(live) < run.desired:
        r = Replica(workload=name, index=run.next_index, since_s=t)
        run.next_index += 1
        run.replicas.append(r)
        live.append(r)
        changed = True
    if len(live) > run.desired:
        extra = sorted(live, key=lambda r: (_REMOVAL_ORDER[r.phase], -r.index))
        for r in extra[: len(live) - run.desired]:
            terminate(engine, run, r, t, t + SCALE_DOWN_GRACE_S)
        changed = True
    for r in run.replicas:
        if r.phase == "pending" and start(engine, r, t) is None:
            changed = True
    if changed:
        engine.dirty_workloads.add(name)
    return changed


def start(engine: World, r: Replica, t: float, pinned: str | None = None) -> str | None:
    """Place a pending replica and start loading its model; a reason if there is no room."""
    spec = engine.specs[r.workload]
    found = engine.placer.find(spec, t, pinned)
    if isinstance(found, str):
        return found
    nodes, cards = found
    engine.placer.bind(spec, r, nodes, cards)
    r.phase, r.since_s, r.ready_at_s = "starting", t, t + spec.load_s
    engine.dirty_nodes.update(nodes)
    engine.dirty_workloads.add(r.workload)
    return None


def terminate(engine: World, run: WorkloadRun, r: Replica, t: float, deadline_s: float) -> None:
    """Stop a replica: it finishes in-flight work until `deadline_s`, then exits."""
    if r.phase == "pending":
        run.replicas.remove(r)
        return
    # It keeps the requests routed to it, running or queued, and drains them (the router
    # sends it nothing new), on an engine of its own.
    detach(r)
    serving = r.server.has_work
    r.phase, r.since_s, r.deadline_s = "terminating", t, deadline_s
    recount(run)
    r.ready_at_s = float("inf") if serving else t + engine.specs[r.workload].exit_s
    engine.dirty_workloads.add(r.workload)


def _remove(engine: World, run: WorkloadRun, r: Replica) -> None:
    engine.dirty_nodes.update(r.nodes)
    engine.placer.release(r)
    run.replicas.remove(r)
    recount(run)
    engine.dirty_workloads.add(r.workload)


def node_changed(engine: World, node: str, *, lost: bool, t: float) -> None:
    """A node was lost (its replicas die, unreachable) or came back (they start again)."""
    for r in engine.replicas_on(node):
        run = engine.state.workloads[r.workload]
        if lost and r.phase in ("starting", "ready", "terminating"):
            detach(r)
            aborted = r.server.abort_all()
            run.scrape.aborted += aborted
            run.series.aborted += aborted
            r.phase, r.since_s, r.deadline_s = "unreachable", t, t + EVICTION_S
            recount(run)
        elif not lost and r.phase == "unreachable":
            r.phase, r.since_s = "starting", t
            r.ready_at_s = t + engine.specs[r.workload].load_s
        engine.dirty_workloads.add(r.workload)
