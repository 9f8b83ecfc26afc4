"""How many replicas a hot workload needs, and whether a calm one can give one back.

Scale-up is sized from the queue, not one replica per decision: with replicas ready, queue wait
falls roughly with capacity, so `ready x wait / SLO` replicas bring it back to the SLO; and
the queue (projected over the next minutes by its trend while replicas serve) at twice the
hot depth per replica. From zero the queue only shows what piled up while nothing served: four
times the hot depth per replica. A decision adds at most `max(4, ready)` replicas (the step of
Kubernetes' HPA: double, or four), so one noisy reading cannot ask for the whole cluster.

Scale-down asks whether the survivors absorb the removed replica's load: what the workload
serves now, spread over one replica fewer, must stay below `absorb_max` of their rated speed,
or the queue would grow at once and the next decision scale up again (the 2 <-> 1 oscillation
of NVIDIA Dynamo's planner, its PR #9294).

Replicas counted as starting are those placed on a ready node and loading; one that is not
placed, or sits on a node that stopped answering, will not become ready by waiting, and does
not hold growth back.
"""

from __future__ import annotations

import math

from agent.signals.model import WorkloadSignals
from agent.signals.settings import AssessSettings
from tools.model import ClusterState, Workload

LOOKAHEAD_MIN = 2.0
"""Minutes of queue trend counted ahead (about a model's load time)."""
ABSORB_MAX = 0.75
"""Share of the survivors' rated speed they may be left serving after a scale-down."""
MIN_STEP = 4


def starting(workload: Workload, state: ClusterState) -> int:
    """Replicas placed on ready nodes and not ready yet (loading: worth waiting for)."""
    count = 0
    for r in workload.placement:
        if r.ready or not r.nodes:
            continue
        nodes = [state.node(n) for n in r.nodes]
        if all(n is not None and n.ready for n in nodes):
            count += 1
    return count


def wanted(workload: Workload, signal: WorkloadSignals, settings: AssessSettings) -> int:
    """Replicas to add now (at least one) for the queue the signal shows."""
    ready = workload.ready_replicas
    depth = signal.queue_depth or 0.0
    per_replica = 2 * settings.hot_depth_per_replica
    if ready > 0:
        # Replicas serve: a queue still growing grows on top of what they drain.
        depth += max(0.0, signal.demand_trend or 0.0) * LOOKAHEAD_MIN
    else:
        # From zero the queue is what piled up while nothing served: only a deep one asks
        # for more than the first replica.
        per_replica *= 2
    total = math.ceil(depth / per_replica)
    if ready > 0 and (signal.demand_trend or 0.0) < 0:
        # The queue drains already: its wait is the backlog of a load, not a lack of replicas.
        return 1
    if ready > 0 and signal.wait_ratio is not None:
        total = max(total, math.ceil(ready * signal.wait_ratio))
    # Growth is decided only when nothing is starting, so the ready replicas are all there is.
    step = max(MIN_STEP, ready)
    return max(1, min(total - ready, step))


def absorbs(workload: Workload, settings_absorb: float = ABSORB_MAX) -> tuple[bool, str]:
    """Whether one replica fewer still serves what the workload serves now, and the figures."""
    rated = workload.rated_tok_s
    served = workload.tokens_per_s
    n = workload.ready_replicas
    if rated is None or rated <= 0 or not served.usable or served.value is None or n <= 1:
        return True, ""
    load = served.value / ((n - 1) * rated)
    figures = (
        f"{served.value:.0f} tok/s over {n - 1} replica(s) rated {rated:g} tok/s would be "
        f"{load:.0%} of their speed"
    )
    return load < settings_absorb, figures
