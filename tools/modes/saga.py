"""The mode rotation as a saga: preflight → drain → switch → probe → commit, or roll back.

Each step is announced in the journal (durably) before it runs and closed after; each step's
moves are idempotent. So when the process dies anywhere, `resume()` in a new process reads the
open transaction and carries it on from the step that was running: forward to a commit while
nothing has failed, else back to the previous mode. The invariant the order keeps:

- the outgoing mode is scaled down and its memory freed before the incoming one is scaled up
  (two models never share a node's memory);
- the incoming mode takes traffic only after its probe passed (commit), and on rollback the
  previous mode is probed as well;
- if the previous mode cannot serve either (a node died), the saga falls back to whichever of
  the two modes can serve on the nodes left, and says 'degraded'. Only when nothing at all can
  serve does a transaction end 'failed'.

Capacity is zero only inside the declared switch window: from the moment traffic to the
outgoing mode stops (drain) to the end of the transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Unpack

from pydantic import JsonValue

from tools.approval import Approval
from tools.backends.base import Cluster
from tools.clock import Clock
from tools.errors import StewardError
from tools.model import ClusterState
from tools.modes.crash import crash_point
from tools.modes.journal import (
    EntryFields,
    EntryKind,
    Journal,
    JournalEntry,
    Result,
    StepName,
    StepStatus,
    Transaction,
)
from tools.modes.model import (
    ProbeCheck,
    RotationOutcome,
    RotationPlan,
    RotationSettings,
    outcome_of,
    plan_rotation,
)
from tools.modes.moves import Moves
from tools.modes.preflight import Check, FitFn, PreflightReport, preflight

StepObserver = Callable[[JournalEntry, RotationPlan], None]
"""Told of every journal entry once it is durable (the agent mirrors them into its audit log).
It runs before the step it announces; one that raises stops the saga there, and a restart
resumes it."""

FORWARD: tuple[StepName, ...] = ("preflight", "drain", "switch", "probe", "commit")


class _Txn:
    """One transaction as this process drives it: its plan and its journal entries so far."""

    def __init__(self, txn: str, plan: RotationPlan, entries: list[JournalEntry], resumed: bool):
        self.txn = txn
        self.plan = plan
        self.entries = entries
        self.resumed = resumed


class Rotation:
    """Rotates a node group between serving modes, transactionally; see the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        journal: Journal,
        *,
        clock: Clock,
        fit: FitFn,
        settings: RotationSettings | None = None,
        persist: Callable[[], None] = lambda: None,
        on_step: StepObserver | None = None,
    ) -> None:
        self.journal = journal
        self.on_step = on_step
        self.clock = clock
        self.fit = fit
        self.settings = settings or RotationSettings()
        self.moves = Moves(cluster, clock, self.settings, persist)

    def check(self, target: str) -> PreflightReport:
        """Preflight alone, on a fresh observation (the dry run); changes nothing."""
        return self._preflight_report(self.moves.observe_fresh(), target)

    def rotate(
        self, target: str, approvals: tuple[Approval, ...] = (), decision_id: str | None = None
    ) -> RotationOutcome:
        """Run one rotation to `target`, first finishing any transaction a crash left open.

        With a `decision_id`, the call is idempotent: when that decision's rotation has already
        run (a resumed act step calls again), its outcome comes back and nothing runs twice.
        """
        with self.journal.exclusive():
            earlier = self._of_decision(decision_id)
            if earlier is not None:
                return outcome_of(earlier) if earlier.finished else self._finish(earlier)
            unfinished = self.journal.unfinished()
            if unfinished is not None:
                self._finish(unfinished)
            plan = plan_rotation(self.moves.observe(), target, approvals, decision_id)
            txn = _Txn(self.journal.new_txn(), plan, [], resumed=False)
            self._log(
                txn,
                "begin",
                message=f"rotate {plan.from_mode or 'nothing'} -> {plan.to_mode}",
                detail={"plan": plan.model_dump(mode="json")},
            )
            return self._forward(txn, "preflight")

    def resume(self) -> RotationOutcome | None:
        """Finish the transaction a crash left open, if any; None when there is none."""
        with self.journal.exclusive():
            unfinished = self.journal.unfinished()
            return self._finish(unfinished) if unfinished is not None else None

    def _of_decision(self, decision_id: str | None) -> Transaction | None:
        if decision_id is None:
            return None
        for found in reversed(self.journal.transactions()):
            plan = found.begin.detail.get("plan")
            if isinstance(plan, dict) and plan.get("decision_id") == decision_id:
                return found
        return None

    # -- driving ------------------------------------------------------------------------------

    def _finish(self, found: Transaction) -> RotationOutcome:
        plan = RotationPlan.model_validate(found.begin.detail["plan"])
        txn = _Txn(found.txn, plan, list(found.entries), resumed=True)
        last = found.last_step()
        if last is None or last.step is None:
            return self._forward(txn, "preflight")
        step, status = last.step, last.status
        if step == "fallback":
            return self._fallback(txn)
        if step == "rollback":
            if status == "done":
                return self._end_rolled_back(txn, last)
            if status == "failed":
                return self._fallback(txn)
            return self._rollback(txn, "resumed after a crash during the rollback")
        if status == "failed":
            if step == "preflight":
                return self._end(txn, "refused", None, (), last.message)
            return self._rollback(txn, f"{step} failed: {last.message}")
        if status == "done":
            if step == "commit":
                return self._end_committed(txn)
            return self._forward(txn, FORWARD[FORWARD.index(step) + 1])
        return self._forward(txn, step)

    def _forward(self, txn: _Txn, start: StepName) -> RotationOutcome:
        steps: dict[StepName, Callable[[_Txn], _Step]] = {
            "preflight": self._preflight,
            "drain": self._drain,
            "switch": self._switch,
            "probe": self._probe,
            "commit": self._commit,
        }
        for step in FORWARD[FORWARD.index(start) :]:
            self._log(txn, "step", step=step, status="started")
            try:
                done = steps[step](txn)
            except StewardError as exc:
                done = _Step(ok=False, message=str(exc))
            status: StepStatus = "done" if done.ok else "failed"
            self._log(
                txn, "step", step=step, status=status, message=done.message, detail=done.detail
            )
            if not done.ok:
                if step == "preflight":
                    return self._end(txn, "refused", None, (), done.message)
                return self._rollback(txn, f"{step} failed: {done.message}")
        return self._end_committed(txn)

    # -- forward steps -------------------------------------------------------------------------

    def _preflight(self, txn: _Txn) -> _Step:
        report = self._preflight_report(self.moves.observe_fresh(), txn.plan.to_mode)
        report = report.model_copy(update={"checks": (*report.checks, _approvals(txn.plan))})
        crash_point("rotate:preflight")
        message = "; ".join(c.message for c in report.failures()) or "all checks passed"
        return _Step(ok=report.ok, message=message, detail=report.as_detail())

    def _drain(self, txn: _Txn) -> _Step:
        outgoing = list(txn.plan.outgoing)
        self.moves.set_accepting(outgoing, False)
        crash_point("rotate:drain")
        left, waited = self.moves.wait_drained(outgoing)
        message = f"waited {waited:.0f} s; {left} request(s) still in flight at the deadline"
        return _Step(ok=True, message=message, detail={"aborted": left, "waited_s": waited})

    def _switch(self, txn: _Txn) -> _Step:
        plan = txn.plan
        self.moves.set_accepting(plan.incoming, False)
        self.moves.scale({name: 0 for name in plan.outgoing})
        crash_point("rotate:switch")
        self.moves.clear(plan.outgoing)
        self.moves.scale(plan.incoming)
        ready = self.moves.wait_ready(plan.incoming, self.moves.mode_nodes(plan.to_mode))
        late = {name: how for name, how in ready.items() if how != "ready"}
        if late:
            message = "not ready: " + ", ".join(f"{n} ({how})" for n, how in late.items())
            return _Step(ok=False, message=message)
        return _Step(ok=True, message=f"{', '.join(ready)} ready")

    def _probe(self, txn: _Txn) -> _Step:
        checks = self.moves.probe_mode(txn.plan.to_mode, list(txn.plan.incoming))
        crash_point("rotate:probe")
        failed = [c.message for c in checks if not c.ok]
        message = "; ".join(failed) if failed else "; ".join(c.message for c in checks)
        return _Step(ok=not failed, message=message, detail=_probe_detail(checks))

    def _commit(self, txn: _Txn) -> _Step:
        self.moves.set_accepting(txn.plan.incoming, True)
        crash_point("rotate:commit")
        return _Step(ok=True, message=f"{txn.plan.to_mode} takes traffic")

    # -- backward ------------------------------------------------------------------------------

    def _rollback(self, txn: _Txn, reason: str) -> RotationOutcome:
        plan = txn.plan
        self._log(txn, "step", step="rollback", status="started", message=reason)
        problems: list[str] = []
        self._try(problems, lambda: self.moves.set_accepting(plan.incoming, False))
        self._try(problems, lambda: self.moves.scale({n: 0 for n in plan.incoming}))
        crash_point("rotate:rollback")
        self._try(problems, lambda: self.moves.clear(plan.incoming))
        serving: list[ProbeCheck] = []
        if plan.from_mode is not None and plan.outgoing and not problems:
            serving = self.moves.bring_up(plan.from_mode, plan.outgoing, problems)
        if serving:
            detail = _probe_detail(serving)
            names = [c.workload for c in serving if c.ok]
            detail["serving"] = list(names)
            entry = self._log(
                txn,
                "step",
                step="rollback",
                status="done",
                message=f"{plan.from_mode} serves again with {', '.join(names)}",
                detail=detail,
            )
            return self._end_rolled_back(txn, entry)
        self._log(
            txn,
            "step",
            step="rollback",
            status="failed",
            message="; ".join(problems) or f"{plan.from_mode} cannot serve",
        )
        return self._fallback(txn)

    def _fallback(self, txn: _Txn) -> RotationOutcome:
        """Whatever can serve on the nodes left: the target mode first (the previous one has
        just failed its rollback), then the previous one."""
        plan = txn.plan
        self._log(txn, "step", step="fallback", status="started")
        everything = {**plan.outgoing, **plan.incoming}
        problems: list[str] = []
        order = [(plan.to_mode, plan.incoming)]
        if plan.from_mode is not None:
            order.append((plan.from_mode, plan.outgoing))
        for mode_name, replicas in order:
            attempt: list[str] = []
            self._try(attempt, lambda: self.moves.set_accepting(everything, False))
            self._try(attempt, lambda: self.moves.scale({n: 0 for n in everything}))
            self._try(attempt, lambda: self.moves.clear(everything))
            serving = [] if attempt else self.moves.bring_up(mode_name, replicas, attempt)
            problems.extend(attempt)
            if serving:
                names = tuple(c.workload for c in serving if c.ok)
                self._log(
                    txn,
                    "step",
                    step="fallback",
                    status="done",
                    message=f"{mode_name} serves with {', '.join(names)}",
                    detail={"serving": list(names), "mode": mode_name},
                )
                degraded = len(names) < len(replicas)
                return self._end(
                    txn,
                    "fallback",
                    mode_name,
                    names,
                    f"fell back to {mode_name}: {_why(txn)}",
                    degraded=degraded,
                )
        message = "; ".join(problems) or "no mode could serve on the nodes left"
        self._log(txn, "step", step="fallback", status="failed", message=message)
        return self._end(txn, "failed", None, (), message)

    # -- helpers -------------------------------------------------------------------------------

    def _preflight_report(self, state: ClusterState, target: str) -> PreflightReport:
        return preflight(state, target, self.settings.limits, self.fit)

    def _try(self, problems: list[str], move: Callable[[], None]) -> None:
        try:
            move()
        except StewardError as exc:
            problems.append(str(exc))

    def _log(self, txn: _Txn, kind: EntryKind, **fields: Unpack[EntryFields]) -> JournalEntry:
        entry = self.journal.append(txn.txn, kind, self.clock.now(), **fields)
        txn.entries.append(entry)
        if self.on_step is not None:
            self.on_step(entry, txn.plan)
        return entry

    def _end_committed(self, txn: _Txn) -> RotationOutcome:
        names = tuple(txn.plan.incoming)
        return self._end(txn, "committed", txn.plan.to_mode, names, f"{txn.plan.to_mode} serves")

    def _end_rolled_back(self, txn: _Txn, done: JournalEntry) -> RotationOutcome:
        raw = done.detail.get("serving", [])
        names = tuple(str(n) for n in raw) if isinstance(raw, list) else ()
        degraded = len(names) < len(txn.plan.outgoing)
        message = f"rolled back to {txn.plan.from_mode}: {_why(txn)}"
        return self._end(txn, "rolled_back", txn.plan.from_mode, names, message, degraded=degraded)

    def _end(
        self,
        txn: _Txn,
        result: Result,
        final_mode: str | None,
        serving: tuple[str, ...],
        message: str,
        *,
        degraded: bool = False,
    ) -> RotationOutcome:
        self._log(
            txn,
            "end",
            result=result,
            message=message,
            detail={"final_mode": final_mode, "serving": list(serving), "degraded": degraded},
        )
        return outcome_of(Transaction(txn=txn.txn, entries=tuple(txn.entries)), txn.resumed)


@dataclass(frozen=True, slots=True)
class _Step:
    """How one forward step ended: done, or failed with the reason."""

    ok: bool
    message: str
    detail: dict[str, JsonValue] = field(default_factory=dict)


def _why(txn: _Txn) -> str:
    """Why the transaction went backwards: the reason its rollback started with."""
    reasons = [e.message for e in txn.entries if e.step == "rollback" and e.status == "started"]
    return reasons[0] if reasons else "the rollback did not run"


def _approvals(plan: RotationPlan) -> Check:
    """The approvals the guard obtained before the saga, recorded (decided there, not here)."""
    if not plan.approvals:
        return Check(name="approvals", ok=True, message="no approval was needed by the policy")
    given = ", ".join(
        f"{a.principal} via {a.channel} at {a.at.isoformat()}" for a in plan.approvals
    )
    return Check(name="approvals", ok=True, message=f"approved by {given}")


def _probe_detail(checks: list[ProbeCheck]) -> dict[str, JsonValue]:
    return {"probes": [c.model_dump(mode="json") for c in checks]}
