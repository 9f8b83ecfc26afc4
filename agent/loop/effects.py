"""What an action is expected to change, in one sentence a person can check afterwards.

`steward plan` prints it next to each verdict, and the decision log keeps it with the signals.
It is read from the observation alone: cards and replicas before and after, the mode's figures.
"""

from __future__ import annotations

from tools.actions import (
    Action,
    CordonNode,
    DrainNode,
    NoOp,
    PlaceReplica,
    RotateMode,
    ScaleWorkload,
    UncordonNode,
)
from tools.model import ClusterState


def expected_effect(action: Action, state: ClusterState) -> str:
    if isinstance(action, ScaleWorkload | PlaceReplica):
        workload = state.workload(action.workload)
        if workload is None:
            return f"nothing: workload {action.workload} is not in the cluster"
        now = workload.desired_replicas
        after = action.replicas if isinstance(action, ScaleWorkload) else now + 1
        cards = workload.cards_per_replica
        where = f" on {action.node}" if isinstance(action, PlaceReplica) else ""
        return (
            f"{workload.name}: {now} -> {after} replica(s){where}; pool {workload.pool} cards "
            f"{state.pool_cards(workload.pool)} -> "
            f"{state.pool_cards(workload.pool) + (after - now) * cards}"
        )
    if isinstance(action, CordonNode):
        return f"{action.node} takes no new replicas; running ones stay"
    if isinstance(action, UncordonNode):
        return f"{action.node} takes new replicas again"
    if isinstance(action, DrainNode):
        moved = [w.name for w in state.workloads for r in w.placement if action.node in r.nodes]
        return f"{action.node} emptied within {action.deadline_s:g} s: {moved or 'no replicas'}"
    if isinstance(action, RotateMode):
        mode = state.mode(action.target_mode)
        if mode is None:
            return f"nothing: mode {action.target_mode} is not defined"
        return (
            f"{'+'.join(mode.nodes)} serve {', '.join(mode.workloads)}: "
            f"{mode.aggregate_peak_tok_s:g} tok/s aggregate, {mode.single_stream_tok_s:g} tok/s "
            f"single stream, context up to {mode.max_context:,}"
        )
    if isinstance(action, NoOp):
        return "nothing changes"
    return ""
