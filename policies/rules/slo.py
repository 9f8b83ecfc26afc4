"""SLO guard: a pool whose queue wait is above its target may not be scaled down.

Only a fresh reading counts; a missing one neither blocks nor permits anything here.
Rule id: slo.queue_wait.
"""

from __future__ import annotations

from policies.rules.context import Context
from policies.rules.ledger import Denial, Ledger
from tools.actions import Action, ScaleWorkload
from tools.effects import Effect

QUEUE_WAIT = "slo.queue_wait"


def check(action: Action, effect: Effect, ctx: Context, ledger: Ledger) -> list[Denial]:
    if type(action) is not ScaleWorkload:
        return []
    breaching = ctx.slo_breaching
    if not breaching:  # the usual case: every pool within its target
        return []
    workload = ctx.state.workload(action.workload)
    assert workload is not None
    pool = workload.pool
    found = breaching.get(pool)
    if found is None:
        return []
    current = ledger.desired_of(workload)
    if action.replicas >= current:
        return []
    worst, target = found
    return [
        Denial(
            QUEUE_WAIT,
            f"pool {pool} queue wait is {worst:g} s, above its {target:g} s "
            "target; it is not scaled down while breaching",
            lower=current,
        )
    ]
