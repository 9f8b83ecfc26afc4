"""Mode rotation: move a node group between serving modes as a transaction that always ends in a
working mode, and the rule that says when a rotation pays.

    rotation = Rotation(cluster, Journal.open(data_dir), clock=..., fit=placement_fit)
    outcome = rotation.rotate("split")      # preflight → drain → switch → probe → commit
    rotation.resume()                       # after a crash: finish the commit or the rollback
    advice = rotation_gain(state, demand)   # the rules planner's "is it worth it?"

journal.py holds the durable journal, preflight.py the checks, moves.py the retried and bounded
moves, saga.py the transaction, advice.py the rule, model.py the settings, plan and outcome.
"""

from tools.clock import Clock, VirtualClock, WallClock
from tools.modes.advice import (
    AdviceSettings,
    Demand,
    RotationAdvice,
    Streams,
    demand_from_state,
    rotation_gain,
)
from tools.modes.crash import CRASH_ENV, crash_point
from tools.modes.journal import Journal, JournalEntry, Result, StepName, Transaction
from tools.modes.model import (
    ProbeCheck,
    RotationOutcome,
    RotationPlan,
    RotationSettings,
    outcome_of,
    plan_rotation,
)
from tools.modes.preflight import (
    Check,
    FitFn,
    FitVerdict,
    PreflightLimits,
    PreflightReport,
    placement_fit,
    preflight,
)
from tools.modes.saga import FORWARD, Rotation, StepObserver

__all__ = [
    "CRASH_ENV",
    "FORWARD",
    "AdviceSettings",
    "Check",
    "Clock",
    "Demand",
    "FitFn",
    "FitVerdict",
    "Journal",
    "JournalEntry",
    "PreflightLimits",
    "PreflightReport",
    "ProbeCheck",
    "Result",
    "Rotation",
    "RotationAdvice",
    "RotationOutcome",
    "RotationPlan",
    "RotationSettings",
    "StepName",
    "StepObserver",
    "Streams",
    "Transaction",
    "VirtualClock",
    "WallClock",
    "crash_point",
    "demand_from_state",
    "outcome_of",
    "placement_fit",
    "plan_rotation",
    "preflight",
    "rotation_gain",
]
