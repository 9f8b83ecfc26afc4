"""A state whose every node and workload has a new version of its own, as a producer gives."""

from __future__ import annotations

from tools.bases import new_version
from tools.model import ClusterState


def versioned(state: ClusterState) -> ClusterState:
    return state.model_copy(
        update={
            "nodes": tuple(n.model_copy(update={"version": new_version()}) for n in state.nodes),
            "workloads": tuple(
                w.model_copy(update={"version": new_version()}) for w in state.workloads
            ),
        }
    )
