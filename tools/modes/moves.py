"""The rotation's moves on the cluster: each primitive retried, each wait bounded.

`Moves` wraps a `Cluster` with what every step of the saga needs: transient errors retried
(tenacity, on the rotation's clock), waits that poll an observation until a condition holds or a
deadline passes, and probes judged against floors. It decides nothing about order or rollback:
that is the saga's job (tools/modes/saga.py). Every move is idempotent — setting a replica count
or a traffic flag twice is the same as once — so a step interrupted by a crash can run again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Literal, TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from tools.backends.base import ActionResult, Cluster, ProbeResult
from tools.clock import Clock
from tools.errors import ActionFailed, StewardError, TemporaryError
from tools.model import ClusterState, Workload
from tools.modes.model import ProbeCheck, RotationSettings

T = TypeVar("T")
ReadyState = Literal["ready", "node_down", "timeout"]


class Moves:
    """The saga's hands on the cluster."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        settings: RotationSettings,
        persist: Callable[[], None],
    ) -> None:
        """`persist` saves what the moves changed (the simulator's state, after every move and
        every wait: its clock moves while the saga waits); a real cluster keeps its own."""
        self.cluster = cluster
        self.clock = clock
        self.settings = settings
        self._persist = persist

    def call(self, fn: Callable[[], T]) -> T:
        """Run one backend call, retrying what a retry can fix (TemporaryError)."""
        retrying = Retrying(
            retry=retry_if_exception_type(TemporaryError),
            stop=stop_after_attempt(self.settings.retry_attempts),
            wait=wait_exponential(multiplier=1, min=1, max=30),
            sleep=self.clock.wait,
            reraise=True,
        )
        return retrying(fn)

    def observe(self) -> ClusterState:
        return self.call(self.cluster.observe)

    def observe_fresh(self) -> ClusterState:
        """An observation whose links are read now (`link_status`), not from the last scrape:
        preflight judges the link as it is when the rotation starts."""
        state = self.observe()
        links = tuple(
            self.call(partial(self.cluster.link_status, link.name)) for link in state.links
        )
        return state.model_copy(update={"links": links})

    def set_accepting(self, workloads: Iterable[str], accepting: bool) -> None:
        """Open or close the gateway to each workload; raises ActionFailed if refused."""
        for name in workloads:
            result = self.call(partial(self.cluster.set_accepting, name, accepting))
            _check(result, f"set_accepting({name}, {accepting})")
        self._persist()

    def scale(self, replicas: dict[str, int]) -> None:
        """Set each workload's replica count; raises ActionFailed if refused."""
        for name, count in replicas.items():
            result = self.call(partial(self.cluster.scale, name, count))
            _check(result, f"scale({name}, {count})")
        self._persist()

    def wait_drained(self, workloads: Iterable[str]) -> tuple[int, float]:
        """Wait for in-flight requests to finish, up to the drain deadline.

        Returns the requests still in flight at the deadline (they are aborted when the replicas
        go) and the seconds waited.
        """
        names = list(workloads)
        start = self.clock.now()
        while True:
            left = sum(self.call(partial(self.cluster.in_flight, name)) for name in names)
            waited = (self.clock.now() - start).total_seconds()
            if left == 0 or waited >= self.settings.drain_deadline_s:
                self._persist()
                return left, waited
            self.clock.wait(min(self.settings.poll_s, self.settings.drain_deadline_s - waited))

    def wait_gone(self, workloads: Iterable[str]) -> list[str]:
        """Wait until each workload holds no memory on a live node; returns those that still do
        at the gone deadline."""
        names = list(workloads)
        start = self.clock.now()
        while True:
            state = self.observe()
            stuck = [n for n in names if _holds_memory(state, state.workload(n))]
            waited = (self.clock.now() - start).total_seconds()
            if not stuck or waited >= self.settings.gone_deadline_s:
                self._persist()
                return stuck
            self.clock.wait(self.settings.poll_s)

    def clear(self, workloads: Iterable[str]) -> None:
        """Wait until the workloads hold no memory; ActionFailed names those that still do."""
        stuck = self.wait_gone(workloads)
        if stuck:
            raise ActionFailed(
                f"{', '.join(stuck)} still hold memory after {self.settings.gone_deadline_s:g} s; "
                "nothing is started over them"
            )

    def wait_ready(self, replicas: dict[str, int], mode_nodes: tuple[str, ...]) -> dict[str, str]:
        """Wait until each workload has its replicas ready; per workload, how it ended.

        A workload whose replica sits on a node that went down, or stays unplaced for the grace
        period while one of the mode's nodes is down, is given up on at once ('node_down').
        """
        start = self.clock.now()
        ended: dict[str, ReadyState] = {}
        while True:
            state = self.observe()
            waited = (self.clock.now() - start).total_seconds()
            down = {n for n in mode_nodes if (node := state.node(n)) is None or not node.ready}
            for name, want in replicas.items():
                if name in ended:
                    continue
                workload = state.workload(name)
                if workload is not None and workload.ready_replicas >= want:
                    ended[name] = "ready"
                elif _blocked(workload, down, waited, self.settings.unplaced_grace_s):
                    ended[name] = "node_down"
            if len(ended) == len(replicas):
                self._persist()
                return dict(ended)
            if waited >= self.settings.ready_deadline_s:
                self._persist()
                return {name: ended.get(name, "timeout") for name in replicas}
            self.clock.wait(self.settings.poll_s)

    def probe(self, workload: str, floor_tok_s: float, min_context: int | None) -> ProbeCheck:
        """A real request through the workload's endpoint, judged; retried on a failed answer."""
        check = ProbeCheck(workload=workload, ok=False, message="not probed")
        for attempt in range(self.settings.probe_attempts):
            if attempt:
                self.clock.wait(self.settings.poll_s)
            try:
                result = self.call(partial(self.cluster.probe, workload))
            except (TemporaryError, ActionFailed) as exc:
                check = ProbeCheck(workload=workload, ok=False, message=f"probe error: {exc}")
                continue
            check = _judge_probe(result, floor_tok_s, min_context)
            if check.ok:
                return check
        return check

    def mode_nodes(self, mode: str) -> tuple[str, ...]:
        found = self.observe().mode(mode)
        return found.nodes if found is not None else ()

    def probe_mode(self, mode: str, workloads: list[str]) -> list[ProbeCheck]:
        """Probe each workload against the floor (the policy's, or a fraction of the mode's
        expected single-stream speed) and its configured context."""
        state = self.observe()
        found = state.mode(mode)
        floor = self.settings.min_tokens_per_s
        if floor is None:
            expected = found.single_stream_tok_s if found is not None else 0.0
            floor = expected * self.settings.probe_floor_fraction
        checks = []
        for name in workloads:
            workload = state.workload(name)
            context = workload.context_length if workload is not None else None
            checks.append(self.probe(name, floor, context))
        return checks

    def bring_up(
        self, mode: str, replicas: dict[str, int], problems: list[str]
    ) -> list[ProbeCheck]:
        """Start a mode's workloads, each on its own (one refused does not stop the others),
        probe those that came up and open traffic to those that passed; returns the passing
        probes (empty when none serves), adding what went wrong to `problems`."""
        started: dict[str, int] = {}
        for name, count in replicas.items():
            try:
                self.scale({name: count})
                started[name] = count
            except StewardError as exc:
                problems.append(str(exc))
        if not started:
            return []
        try:
            ready = self.wait_ready(started, self.mode_nodes(mode))
            up = [name for name, how in ready.items() if how == "ready"]
            problems.extend(f"{n} not ready ({how})" for n, how in ready.items() if how != "ready")
            checks = self.probe_mode(mode, up)
            passed = [c for c in checks if c.ok]
            problems.extend(c.message for c in checks if not c.ok)
            self.set_accepting([c.workload for c in passed], True)
        except StewardError as exc:
            problems.append(str(exc))
            return []
        return passed


def _check(result: ActionResult, what: str) -> None:
    if not result.ok:
        raise ActionFailed(f"{what} was refused by the cluster: {result.message}")


def _holds_memory(state: ClusterState, workload: Workload | None) -> bool:
    """True while a replica of the workload occupies a node that is up."""
    if workload is None:
        return False
    for replica in workload.placement:
        if any((node := state.node(n)) is not None and node.ready for n in replica.nodes):
            return True
    return False


def _blocked(workload: Workload | None, down: set[str], waited: float, grace_s: float) -> bool:
    if workload is None or not down:
        return False
    if any(set(r.nodes) & down for r in workload.placement):
        return True
    placed = sum(1 for r in workload.placement if r.nodes)
    return placed < workload.desired_replicas and waited >= grace_s


def _judge_probe(result: ProbeResult, floor_tok_s: float, min_context: int | None) -> ProbeCheck:
    workload, ready = result.workload, result.ready_replicas
    tok_s, context = result.tokens_per_s, result.context_length
    problems: list[str] = []
    if not result.ok:
        problems.append(f"the endpoint failed: {result.message or 'no answer'}")
    if ready < 1:
        problems.append("no replica is ready")
    if tok_s is None or tok_s < floor_tok_s:
        shown = "none" if tok_s is None else f"{tok_s:.1f}"
        problems.append(f"{shown} tok/s is below the floor of {floor_tok_s:.1f}")
    if min_context is not None and (context is None or context < min_context):
        shown = "none" if context is None else f"{context:,}"
        problems.append(f"context {shown} is below the configured {min_context:,}")
    verdict = "; ".join(problems) if problems else "answered"
    return ProbeCheck(
        workload=workload,
        ok=not problems,
        ready_replicas=ready,
        tokens_per_s=tok_s,
        context_length=context,
        message=f"{workload}: {verdict}",
    )
