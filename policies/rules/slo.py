"""SLO guard: a pool whose queue wait is above its target may not be scaled down.

Only a fresh reading counts; a missing one neither blocks nor permits anything here.
Rule id: slo.queue_wait.
"""

from __future__ import annotations

from policies.rules.ledger import Context, Denial, Effect, Ledger
from tools.actions import Action, ScaleWorkload

QUEUE_WAIT = "slo.queue_wait"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    if type(action) is not ScaleWorkload:
        return []
    workload = ctx.state.workload(action.workload)
    assert workload is not None
    target = ctx.policy.slo.get(workload.pool)
    current = ledger.desired_of(workload)
    if target is None or action.replicas >= current:
        return []
    worst = ctx.worst_queue_wait.get(workload.pool)
    if worst is None or worst <= target.queue_wait_s:
        return []
    return [
        Denial(
            QUEUE_WAIT,
            f"pool {workload.pool} queue wait is {worst:g} s, above its {target.queue_wait_s:g} s "
            "target; it is not scaled down while breaching",
            lower=current,
        )
    ]
