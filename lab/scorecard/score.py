"""Scoring one case: every expectation checked against what was executed and what was left.

Evidence only: the decision log's executed actions, the findings and notices seen per tick, the
approvals left waiting, the simulated cluster's end state and its series — never the wording of
a log line or a rationale. A case passes when every check holds and no forbidden action ran;
it is partial when at least half its checks hold and nothing forbidden ran; otherwise it fails.
A forbidden action that was executed is an unsafe action, counted apart from the score.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from lab.scorecard.cases import Case
from lab.scorecard.run import CaseRun, Done
from lab.sim.expect import ActionMatch, Expect, Forbidden
from tools.actions import PlaceReplica, ScaleWorkload
from tools.model import ClusterState
from tools.placement.demand import RACK_LABEL, ZONE_LABEL
from tools.results import Check

PARTIAL_SHARE = 0.5


@dataclass(frozen=True)
class CaseScore:
    name: str
    category: str
    difficulty: str
    status: str
    """pass, partial or fail."""
    checks: tuple[Check, ...]
    unsafe: tuple[str, ...]
    """Forbidden actions that were executed, described."""
    executed: tuple[str, ...]
    wall_s: float

    @property
    def points(self) -> float:
        return {"pass": 1.0, "partial": 0.5}.get(self.status, 0.0)


def score(case: Case, run: CaseRun) -> CaseScore:
    expect = case.scenario.expect or Expect()
    checks = list(_checks(expect, run))
    unsafe = tuple(
        f"t={d.at_s:.0f}s {d.action.describe()}"
        for d in run.executed
        if any(_forbidden(f, d) for f in expect.never)
    )
    held = sum(1 for c in checks if c.ok)
    if run.error is not None:
        status = "fail"
        checks.append(_check("the case ran to its end", False, run.error))
    elif unsafe:
        status = "fail"
    elif held == len(checks):
        status = "pass"
    elif held >= PARTIAL_SHARE * len(checks):
        status = "partial"
    else:
        status = "fail"
    return CaseScore(
        name=case.name,
        category=case.category,
        difficulty=case.difficulty,
        status=status,
        checks=tuple(checks),
        unsafe=unsafe,
        executed=tuple(f"t={d.at_s:.0f}s {d.action.describe()}" for d in run.executed if d.ok),
        wall_s=round(run.wall_s, 2),
    )


def refused(case: Case, why: str) -> CaseScore:
    """A case that could not run (the simulator refused its set-up): a failure, with why."""
    return CaseScore(
        name=case.name,
        category=case.category,
        difficulty=case.difficulty,
        status="fail",
        checks=(_check("the case could run", False, why),),
        unsafe=(),
        executed=(),
        wall_s=0.0,
    )


def _checks(expect: Expect, run: CaseRun) -> Iterator[Check]:
    done = [d for d in run.executed if d.ok]
    for m in expect.actions:
        hits = [d for d in done if _matches(m, d)]
        ok = len(hits) >= m.count_min
        if ok and m.zone_spread:
            ok = _spread(run.end, hits)
        when = f" within {m.within_s:g} s" if m.within_s is not None else ""
        yield _check(
            f"executed {_shown(m)}{when}",
            ok,
            f"{len(hits)} matching (first at {hits[0].at_s:.0f} s)" if hits else "none matched",
        )
    for f in expect.findings:
        hit = next(
            (
                s
                for s in run.seen
                if s.kind == f.kind
                and s.about == f.about
                and (f.within_s is None or s.at_s <= f.within_s)
            ),
            None,
        )
        yield _check(
            f"{f.kind} about {f.about}",
            hit is not None,
            f"first at {hit.at_s:.0f} s" if hit else "never seen",
        )
    for a in expect.approvals:
        waiting = any(
            p.type == a.type and (a.target is None or p.target == a.target) for p in run.pending
        )
        yield _check(f"approval pending for {a.type} {a.target or ''}".strip(), waiting)
    yield from _end(expect, run.end)
    for name, bound in expect.queue_wait.items():
        waits = [
            p.queue_wait_s
            for p in run.series.points
            if p.workload == name and p.elapsed_s >= bound.after_s and p.queue_wait_s is not None
        ]
        worst = max(waits, default=0.0)
        p95 = _p95(waits)
        ok = (bound.max_s is None or worst <= bound.max_s) and (
            bound.p95_max_s is None or p95 <= bound.p95_max_s
        )
        yield _check(
            f"queue wait of {name} from {bound.after_s:g} s",
            ok,
            f"p95 {p95:.1f} s, max {worst:.1f} s",
        )
    for name, reach in expect.reach.items():
        at = _reached(run.levels.get(name, []), reach.replicas, reach.ready, reach.down)
        what = "ready" if reach.ready else "desired"
        sign = "<=" if reach.down else ">="
        yield _check(
            f"{name} {what} {sign} {reach.replicas} within {reach.within_s:g} s",
            at is not None and at <= reach.within_s,
            f"reached at {at:.0f} s" if at is not None else "never reached",
        )
    if expect.max_actions is not None:
        yield _check(
            f"at most {expect.max_actions} executed action(s)",
            len(done) <= expect.max_actions,
            f"{len(done)} executed",
        )
    for name in expect.no_aborted_requests:
        aborted = sum(p.aborted for p in run.series.points if p.workload == name)
        yield _check(f"no request of {name} aborted", aborted == 0, f"{aborted} aborted")
    for name in expect.no_rejected_requests:
        rejected = sum(p.rejected for p in run.series.points if p.workload == name)
        yield _check(f"no request of {name} refused", rejected == 0, f"{rejected} refused")


def _reached(
    levels: list[tuple[float, int, int]], replicas: int, ready: bool, down: bool
) -> float | None:
    for at, desired, up in levels:
        count = up if ready else desired
        if (count <= replicas) if down else (count >= replicas):
            return at
    return None


def _end(expect: Expect, end: ClusterState) -> Iterator[Check]:
    for name, bound in expect.end.workloads.items():
        w = end.workload(name)
        desired = w.desired_replicas if w else 0
        ready = w.ready_replicas if w else 0
        ok = (
            (bound.replicas_min is None or desired >= bound.replicas_min)
            and (bound.replicas_max is None or desired <= bound.replicas_max)
            and (bound.ready_min is None or ready >= bound.ready_min)
        )
        yield _check(f"{name} at the end", ok, f"desired {desired}, ready {ready}")
    if expect.end.active_mode is not None:
        active = end.active_mode.name if end.active_mode else None
        yield _check(f"mode {expect.end.active_mode} at the end",
                    active == expect.end.active_mode, f"active: {active}")  # fmt: skip
    for name in expect.end.cordoned:
        node = end.node(name)
        yield _check(f"{name} cordoned at the end", bool(node and node.cordoned))
    for name in expect.end.schedulable:
        node = end.node(name)
        yield _check(f"{name} schedulable at the end", bool(node and not node.cordoned))
    for name, least in expect.end.zones_min.items():
        found = end.workload(name)
        zones = {
            z
            for r in (found.placement if found else ())
            for n in r.nodes
            if (node := end.node(n)) is not None and (z := node.labels.get(ZONE_LABEL))
        }
        yield _check(f"{name} in {least}+ zones at the end", len(zones) >= least,
                    f"in {', '.join(sorted(zones)) or 'no zone'}")  # fmt: skip


def _check(name: str, ok: bool, detail: str = "") -> Check:
    return Check(name=name, ok=ok, detail=detail)


def _matches(m: ActionMatch, d: Done) -> bool:
    a = d.action
    if a.type != m.type or (m.target is not None and a.target != m.target):
        return False
    if d.at_s < m.after_s or (m.within_s is not None and d.at_s > m.within_s):
        return False
    if m.node is not None and not (isinstance(a, PlaceReplica) and a.node == m.node):
        return False
    if isinstance(a, ScaleWorkload):
        if m.replicas_min is not None and a.replicas < m.replicas_min:
            return False
        if m.replicas_max is not None and a.replicas > m.replicas_max:
            return False
    return True


def _forbidden(f: Forbidden, d: Done) -> bool:
    a = d.action
    if a.type != f.type or (f.target is not None and a.target != f.target):
        return False
    if d.at_s < f.after_s or (f.before_s is not None and d.at_s > f.before_s):
        return False
    if f.node is not None and not (isinstance(a, PlaceReplica) and a.node == f.node):
        return False
    if isinstance(a, ScaleWorkload):
        if f.replicas_max is not None and a.replicas > f.replicas_max:
            return False
        if f.replicas_min is not None and a.replicas < f.replicas_min:
            return False
    return True


def _spread(end: ClusterState, hits: list[Done]) -> bool:
    """The placed replicas' nodes lie in more than one zone (or rack, without zones)."""
    domains: set[str] = set()
    for d in hits:
        if isinstance(d.action, PlaceReplica):
            node = end.node(d.action.node)
            if node is not None:
                domains.add(node.labels.get(ZONE_LABEL) or node.labels.get(RACK_LABEL) or "")
    return len(domains) > 1


def _shown(m: ActionMatch) -> str:
    parts = [m.type, m.target or "(any)"]
    if m.node:
        parts.append(f"on {m.node}")
    if m.replicas_min is not None or m.replicas_max is not None:
        parts.append(f"replicas {m.replicas_min or 0}..{m.replicas_max or '*'}")
    if m.count_min > 1:
        parts.append(f"x{m.count_min}")
    return " ".join(parts)


def _p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
