"""Placement: pick nodes that truly fit — shared-GPU accounting, unified memory, context fit.

- `node_capacity(state)`: every node's cards counted physically (exclusive, MPS, time-slicing,
  MIG) with their real clients, and its memory (measured, or the host's on unified memory).
- `sharing_anomalies(state)`: where the scheduler's count disagrees with the cards (the seeds'
  MPS card counted twice), each with its explanation and fix.
- `fit(model, context, mode)`: weights + KV cache + overhead against a node's memory, per mode,
  and the largest context that fits; the model catalogue (`models.yaml`) users extend.
- `pick_node(workload, state, hints)`: ranked candidates with reasons; `explain_placement` adds
  the rejected nodes and why; `pick_nodes` places many replicas without over-committing.
- `room_behind_cordons(workload, state)`: the cordoned nodes that would fit one more replica.
"""

from tools.placement.anomalies import Anomaly, AnomalyKind, sharing_anomalies
from tools.placement.capacity import CardCapacity, NodeCapacity, node_capacity
from tools.placement.catalog import (
    CATALOG_ENV,
    Catalog,
    GpuSpec,
    HostProfile,
    ModelSpec,
    ServingOverhead,
    default_catalog,
    load_catalog,
)
from tools.placement.cordons import room_behind_cordons
from tools.placement.demand import DEFAULT_SHARING, Demand, PlacementHints, Strategy
from tools.placement.memoryfit import (
    FitMode,
    FitReport,
    MemoryBreakdown,
    NodeBudget,
    fit,
    fit_budget,
    max_tokens,
    memory_need,
    node_budget,
    standard_context,
)
from tools.placement.picking import explain_placement, pick_node, pick_nodes
from tools.placement.ranking import Candidate, Placement, Rejection

__all__ = [
    "CATALOG_ENV",
    "DEFAULT_SHARING",
    "Anomaly",
    "AnomalyKind",
    "Candidate",
    "CardCapacity",
    "Catalog",
    "Demand",
    "FitMode",
    "FitReport",
    "GpuSpec",
    "HostProfile",
    "MemoryBreakdown",
    "ModelSpec",
    "NodeBudget",
    "NodeCapacity",
    "Placement",
    "PlacementHints",
    "Rejection",
    "ServingOverhead",
    "Strategy",
    "default_catalog",
    "explain_placement",
    "fit",
    "fit_budget",
    "load_catalog",
    "max_tokens",
    "memory_need",
    "node_budget",
    "node_capacity",
    "pick_node",
    "pick_nodes",
    "room_behind_cordons",
    "sharing_anomalies",
    "standard_context",
]
