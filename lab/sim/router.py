"""The router in front of a workload's ready replicas, and the folding of replicas alike.

Least loaded first: a request goes to the ready replica with the fewest requests waiting and
running (lab.sim.serving says what a replica then does with it). A fleet's arrivals come as
cohorts (`count` identical requests, demand.py); a cohort is spread over the replicas, filling
the least loaded first, as a least-loaded router would send its requests one by one.

Folding, for speed: ready replicas whose engines are alike share one `Server` object, which
stands for each of them (its counts are one replica's); stepping it once steps them all. Idle
replicas are alike, so they are folded into one before the router hands out work; a cohort
spread evenly over a group keeps its members alike (one replica's share may then be a fraction
of a request: the fluid limit of many requests spread over many replicas). A single request
goes to one replica: if that replica shares its engine, it is first given a copy of its own
(`detach`), as is a replica that stops being ready (scaled down, lost with its node). Each
replica keeps its own busy time through `Replica.busy_offset`. Without cohorts (the homelab,
request by request) no two busy replicas share an engine, and every one steps on its own.
"""

from __future__ import annotations

import copy
from collections import deque

from lab.sim.demand import Request
from lab.sim.serving import COUNT_EPS, Server, Window, enqueue, too_long
from lab.sim.state import Replica, WorkloadRun


def load(server: Server) -> float:
    """Requests one replica holds, waiting or running: what a least-loaded router compares."""
    return server.waiting_n + server.in_flight


def groups(replicas: list[Replica]) -> list[tuple[Server, list[Replica]]]:
    """The ready replicas by the engine they share (one group each, in replica order)."""
    found: dict[int, tuple[Server, list[Replica]]] = {}
    for r in replicas:
        if r.phase == "ready":
            found.setdefault(id(r.server), (r.server, []))[1].append(r)
    return list(found.values())


def detach(r: Replica) -> None:
    """Give `r` an engine of its own, a copy of the one it shares (no-op if it shares none)."""
    r.server = copy.deepcopy(r.server)


def _rebind(r: Replica, server: Server) -> None:
    """Make `r` share `server`, keeping its busy time continuous."""
    r.busy_offset += server.busy_s - r.server.busy_s
    r.server = server


def fold_idle(run: WorkloadRun, t: float) -> list[tuple[Server, list[Replica]]]:
    """Fold the ready replicas with nothing to do (and no step running past `t`) into one;
    returns the ready replicas' groups then (as `groups`)."""
    idle: Server | None = None
    found: dict[int, tuple[Server, list[Replica]]] = {}
    last: tuple[Server, list[Replica]] | None = None
    for r in run.replicas:
        if r.phase != "ready":
            continue
        server = r.server
        if last is not None and server is last[0]:  # folded replicas sit side by side
            last[1].append(r)
            continue
        if server.in_flight <= COUNT_EPS and server.waiting_n <= COUNT_EPS and server.clock <= t:
            if idle is None:
                idle = server
            elif server is not idle:
                _rebind(r, idle)
                server = idle
        group = found.get(id(server))
        if group is None:
            group = found[id(server)] = (server, [r])
        else:
            group[1].append(r)
        last = group
    return list(found.values())


def dispatch(
    run: WorkloadRun,
    *,
    t: float,
    kv_capacity: int,
    context_length: int | None,
    windows: tuple[Window, ...],
) -> None:
    """Route the gateway's queue to the ready replicas (idle ones folded first, `fold_idle`);
    reject what no replica can hold."""
    queue: deque[Request] = run.queue
    found = fold_idle(run, t)
    while queue:
        req = queue.popleft()
        need = req.input_tokens + req.output_tokens
        if too_long(need, kv_capacity, context_length):
            for w in windows:
                w.rejected += req.count
                w.longest_rejected = max(w.longest_rejected, need)
            continue
        if req.count == 1:
            at = min(range(len(found)), key=lambda i: load(found[i][0]))
            server, members = found[at]
            if len(members) > 1:  # one replica takes it: it leaves the group
                r = members.pop()
                detach(r)
                found.append((r.server, [r]))
                server = r.server
            enqueue(server, req, 1.0, need)
            continue
        for (server, _members), share in zip(
            found, _spread([(load(s), len(m)) for s, m in found], req.count), strict=True
        ):
            if share > COUNT_EPS:
                enqueue(server, req, share, need)


def _spread(groups: list[tuple[float, int]], count: float) -> list[float]:
    """Each group's share per replica of `count` requests, filling the least loaded first:
    groups are (load per replica, replicas)."""
    order = sorted(range(len(groups)), key=lambda i: groups[i][0])
    level = groups[order[0]][0]
    width = 0  # replicas raised to `level` so far
    left = float(count)
    k = 0
    while k < len(order):
        load_k, m_k = groups[order[k]]
        if load_k > level:
            rise = (load_k - level) * width
            if rise > left:
                break
            left -= rise
            level = load_k
        width += m_k
        k += 1
    level += left / width
    out = [0.0] * len(groups)
    for j in range(k):
        i = order[j]
        out[i] = level - groups[i][0]
    return out
