"""Render jobs: how a render workload's replicas work through its job queue.

A render workload (profile kind `render`) has a FIFO queue of jobs (requests with `work_s`, see
demand.RenderDemand). Each ready replica runs one job at a time, all its cards busy at the
workload's `busy_utilization`; an idle replica's cards are idle (utilization 0), which is what
lets a render pool be seen idle and go to zero. Jobs wait in the queue while no replica is ready
(a pool at zero, replicas still loading): nothing is lost, the wait grows.

A running job is kept on its replica's own `Server` (state.Replica.server), so the store persists
it with no state of its own: one `Flight` in `prefilling` whose `prefill_left` is the seconds of
work still to do, `in_flight` 1 while it runs. A replica scaled down finishes its job within the
grace period (lifecycle.terminate), else the job is aborted; a lost node aborts it at once.
"""

from __future__ import annotations

from lab.sim.profiles import WorkloadSpec
from lab.sim.serving import Flight, Window
from lab.sim.state import Replica, WorkloadRun

DONE_EPS_S = 1e-9


def serve(run: WorkloadRun, spec: WorkloadSpec, t: float, dt: float) -> None:
    """Run jobs for `dt` seconds from `t`: ready replicas take queued jobs when free; replicas
    terminating finish the job they hold but take none."""
    windows = (run.scrape, run.series)
    for r in run.replicas:
        if r.phase == "ready":
            _work(r, run, spec, t, dt, windows, take=run.accepting)
        elif r.phase == "terminating" and r.server.in_flight:
            _work(r, run, spec, t, dt, windows, take=False)


def _work(  # noqa: PLR0917 - one internal call shape
    r: Replica,
    run: WorkloadRun,
    spec: WorkloadSpec,
    t: float,
    dt: float,
    windows: tuple[Window, ...],
    *,
    take: bool,
) -> None:
    server = r.server
    left = dt
    while left > DONE_EPS_S:
        if not server.prefilling:
            if not take or not run.queue:
                return
            now = t + dt - left
            req = run.queue[0]
            if req.count > 1:
                req.count -= 1
            else:
                run.queue.popleft()
            server.prefilling.append(Flight(req.arrival_s, req.work_s, 0, 0))
            server.in_flight = 1
            for w in windows:
                w.admitted(max(0.0, now - req.arrival_s), req.arrival_s, 1)
        job = server.prefilling[0]
        ran = min(left, job.prefill_left)
        job.prefill_left -= ran
        left -= ran
        server.busy_s += ran * spec.busy_utilization
        if job.prefill_left <= DONE_EPS_S:
            server.prefilling.popleft()
            server.in_flight = 0
            for w in windows:
                w.completed += 1


def running(run: WorkloadRun) -> int:
    """Jobs running now (on ready and terminating replicas)."""
    return round(sum(r.server.in_flight for r in run.replicas))
