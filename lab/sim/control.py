"""The simulated cluster API's write side: scale, place, cordon, uncordon, and drain's eviction.

Each function checks first and changes nothing when it refuses (ok=False, with a message naming
the node, the memory and who holds it) or when `dry_run` is set (it then says what it would do).
A name that exists nowhere raises InvalidInput: that is a bad action, not a refusal.
"""

from __future__ import annotations

from lab.sim import lifecycle
from lab.sim.engine import Engine
from lab.sim.placement import gib
from lab.sim.state import SCALE_DOWN_GRACE_S, Replica, WorkloadRun
from tools.errors import InvalidInput
from tools.results import ActionResult


def _run(engine: Engine, workload: str) -> WorkloadRun:
    run = engine.state.workloads.get(workload)
    if run is None:
        known = ", ".join(engine.specs)
        raise InvalidInput(f"no workload named {workload!r} (known: {known})")
    return run


def check_node(engine: Engine, node: str) -> None:
    if node not in engine.state.nodes:
        raise InvalidInput(f"no node named {node!r} (known: {', '.join(engine.state.nodes)})")


def scale(engine: Engine, workload: str, replicas: int, dry_run: bool) -> ActionResult:
    run = _run(engine, workload)
    if replicas < 0:
        raise InvalidInput(f"scale {workload}: replicas must be >= 0, got {replicas}")
    spec = engine.specs[workload]
    t = engine.state.t
    before = run.desired
    if replicas == before:
        return ActionResult(ok=True, dry_run=dry_run, message=f"{workload} already at {before}")
    if replicas > before:
        refusal = _room_for(engine, workload, replicas - before)
        if refusal is not None and not _room_once_freed(engine, workload, replicas - before):
            return ActionResult(ok=False, dry_run=dry_run, message=refusal)
        what = f"{replicas - before} replica(s) start, ready in ~{spec.load_s:g} s (model load)"
        if refusal is not None:
            what += "; pending until replicas now terminating free their cards"
    else:
        what = (
            f"{before - replicas} replica(s) terminate after their in-flight requests "
            f"(up to {SCALE_DOWN_GRACE_S:g} s) and free their memory"
        )
    verb = "would scale" if dry_run else "scaled"
    message = f"{verb} {workload} {before} -> {replicas}: {what}"
    if dry_run:
        return ActionResult(ok=True, dry_run=True, message=message)
    run.desired = replicas
    lifecycle.reconcile(engine, workload, run, t)
    placed = [f"{r.index} on {'+'.join(r.nodes)}" for r in run.replicas if r.phase == "starting"]
    if placed and replicas > before:
        message += f" (replica {', '.join(placed)})"
    engine.version += 1
    return ActionResult(ok=True, dry_run=False, message=message, changed=True)


def _room_for(engine: Engine, workload: str, extra: int, pinned: str | None = None) -> str | None:
    """Whether `extra` more replicas fit now; binds trial replicas and releases them again."""
    spec = engine.specs[workload]
    trials: list[Replica] = []
    try:
        for i in range(extra):
            found = engine.placer.find(spec, engine.state.t, pinned)
            if isinstance(found, str):
                return found if i == 0 else f"only {i} of {extra} fit: {found}"
            trial = Replica(workload=workload, index=-1 - i)
            engine.placer.bind(spec, trial, *found)
            trials.append(trial)
        return None
    finally:
        for trial in trials:
            engine.placer.release(trial)


def _room_once_freed(engine: Engine, workload: str, extra: int) -> bool:
    """Whether `extra` more replicas fit once the replicas now terminating have exited (a
    Deployment scaled up then has pending pods that start when those cards free)."""
    leaving = [
        (r, list(r.nodes), list(r.cards))
        for run in engine.state.workloads.values()
        for r in run.replicas
        if r.phase == "terminating" and r.nodes
    ]
    if not leaving:
        return False
    for r, _, _ in leaving:
        engine.placer.release(r)
    try:
        return _room_for(engine, workload, extra) is None
    finally:
        for r, nodes, cards in leaving:
            engine.placer.bind(engine.specs[r.workload], r, nodes, cards)


def place(
    engine: Engine, workload: str, node: str, gpus: tuple[str, ...], dry_run: bool
) -> ActionResult:
    run = _run(engine, workload)
    check_node(engine, node)
    spec = engine.specs[workload]
    if gpus:
        wrong = [g for g in gpus if g not in engine.placer.node_cards[node]]
        if wrong:
            raise InvalidInput(f"place {workload}: {', '.join(wrong)} are not cards of {node}")
        need = -(-spec.cards_per_replica // spec.nodes_per_replica)
        if len(gpus) != need:
            raise InvalidInput(f"place {workload}: one replica takes {need} card(s) on a node")
    refusal = _room_for(engine, workload, 1, pinned=node)
    if refusal is None and gpus:
        refusal = _cards_refusal(engine, workload, gpus)
    if refusal is not None:
        return ActionResult(ok=False, dry_run=dry_run, message=refusal)
    if dry_run:
        return ActionResult(
            ok=True, dry_run=True, message=f"would start a replica of {workload} on {node}"
        )
    r = Replica(workload=workload, index=run.next_index, since_s=engine.state.t)
    run.next_index += 1
    found = engine.placer.find(spec, engine.state.t, node)
    if isinstance(found, str):  # _room_for just said there is room: the same question
        return ActionResult(ok=False, dry_run=False, message=found)
    engine.placer.bind(spec, r, found[0], list(gpus) or found[1])
    r.phase, r.since_s, r.ready_at_s = "starting", engine.state.t, engine.state.t + spec.load_s
    run.replicas.append(r)
    run.desired += 1
    engine.dirty_nodes.update(r.nodes)
    engine.dirty_workloads.add(workload)
    engine.version += 1
    return ActionResult(
        ok=True,
        dry_run=False,
        changed=True,
        message=f"started replica {r.index} of {workload} on {'+'.join(r.nodes)}, "
        f"ready in ~{spec.load_s:g} s",
    )


def _cards_refusal(engine: Engine, workload: str, gpus: tuple[str, ...]) -> str | None:
    spec = engine.specs[workload]
    per_card = spec.memory_per_node_bytes // len(gpus)
    for g in gpus:
        card = engine.placer.card_spec[g]
        node = engine.placer.nodes[next(n for n, cs in engine.placer.node_cards.items() if g in cs)]
        free = engine.placer.card_capacity(g, node) - engine.placer.card_used(g)
        slots = card.sharing.replicas - len(engine.placer.clients[g])
        if slots < 1 or free < per_card:
            return f"card {g} has {slots} free slot(s) and {gib(free)} free, needs {gib(per_card)}"
    return None


def set_accepting(engine: Engine, workload: str, accepting: bool, dry_run: bool) -> ActionResult:
    run = _run(engine, workload)
    word = "open" if accepting else "closed"
    if run.accepting == accepting:
        return ActionResult(
            ok=True, dry_run=dry_run, message=f"{workload}'s gateway already {word}"
        )
    if dry_run:
        return ActionResult(ok=True, dry_run=True, message=f"would set {workload}'s gateway {word}")
    run.accepting = accepting
    engine.dirty_workloads.add(workload)
    engine.version += 1
    in_flight = sum(engine.replica_in_flight(r) for r in run.replicas)
    return ActionResult(
        ok=True,
        dry_run=False,
        changed=True,
        message=f"{workload}'s gateway {word} ({in_flight} request(s) in flight)",
    )


def set_cordon(
    engine: Engine, node: str, cordoned: bool, dry_run: bool, *, by_steward: bool = False
) -> ActionResult:
    """Cordon or uncordon `node`; `by_steward`: the cordon is Steward's own (else a person's,
    or anyone else's). Cordoning a node already cordoned leaves its author as it was."""
    check_node(engine, node)
    run = engine.state.nodes[node]
    verb = "cordon" if cordoned else "uncordon"
    if run.cordoned == cordoned:
        state = "cordoned" if cordoned else "schedulable"
        return ActionResult(ok=True, dry_run=dry_run, message=f"{node} already {state}")
    if dry_run:
        return ActionResult(ok=True, dry_run=True, message=f"would {verb} {node}")
    run.cordoned = cordoned
    run.cordoned_by_steward = cordoned and by_steward
    engine.dirty_nodes.add(node)
    engine.version += 1
    if not cordoned:  # pending replicas may fit now
        for name, wrun in engine.state.workloads.items():
            lifecycle.reconcile(engine, name, wrun, engine.state.t)
    return ActionResult(ok=True, dry_run=False, changed=True, message=f"{verb}ed {node}")


def evict(engine: Engine, node: str, deadline_s: float) -> list[Replica]:
    """Cordon `node` and start terminating its replicas; returns those still to finish."""
    t = engine.state.t
    node_run = engine.state.nodes[node]
    if not node_run.cordoned:  # Steward's drain: its cordon is Steward's own
        node_run.cordoned = node_run.cordoned_by_steward = True
    engine.dirty_nodes.add(node)
    engine.version += 1
    evicted = []
    for r in engine.replicas_on(node):
        run = engine.state.workloads[r.workload]
        if r.phase == "unreachable":
            engine.placer.release(r)
            run.replicas.remove(r)
            lifecycle.recount(run)
            engine.dirty_workloads.add(r.workload)
            continue
        if r.phase != "terminating":
            lifecycle.terminate(engine, run, r, t, t + deadline_s)
        else:
            r.deadline_s = min(r.deadline_s, t + deadline_s)
        evicted.append(r)
    return evicted
