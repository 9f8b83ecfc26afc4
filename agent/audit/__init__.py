"""The decision log: append-only, hash-chained, crash-safe, and able to answer "why?".

    log = AuditLog.open(data_dir)            # the writer (the leader); readonly=True for readers
    interrupted = log.reconcile()            # at start: intents left without an outcome
    log.write_intent(Intent(...))            # what was proposed (at approve, or at act)
    write_execution(log, ..., Execution(...)) # verdicts at execution: durable before any action
    log.write_outcome(Outcome(...))          # what ran, results, verification
    log.verify()                             # VerifyReport naming edits, gaps, reorders, cuts

records.py holds the schema, chain.py the hashed spelling of a record, store.py the SQLite
log, verify.py the checks, explanations.py the readable forms (explain, show, export).
"""

from agent.audit.errors import AuditError
from agent.audit.explanations import (
    ActionExplanation,
    Explanation,
    explain,
    export_row,
    render,
    summary,
)
from agent.audit.head_file import HEAD_FILE, LogLost
from agent.audit.queries import ExecutedAction
from agent.audit.records import (
    GENESIS_HASH,
    KINDS,
    SCHEMA_VERSION,
    ActionOutcome,
    ApprovalRecord,
    DeliberationRecord,
    DryRunPlan,
    Execution,
    Fallback,
    FindingChange,
    FindingKind,
    GateVerdict,
    Intent,
    Interrupted,
    Kind,
    ModeStep,
    Outcome,
    Payload,
    Proposal,
    Record,
    Startup,
    new_decision_id,
    proposals,
)
from agent.audit.store import DB_NAME, KEY_ENV, AuditLog, key_from_env
from agent.audit.verify import Problem, ProblemKind, VerifyReport
from tools.results import Check

__all__ = [
    "DB_NAME",
    "GENESIS_HASH",
    "HEAD_FILE",
    "KEY_ENV",
    "KINDS",
    "SCHEMA_VERSION",
    "ActionExplanation",
    "ActionOutcome",
    "ApprovalRecord",
    "AuditError",
    "AuditLog",
    "Check",
    "DeliberationRecord",
    "DryRunPlan",
    "ExecutedAction",
    "Execution",
    "Explanation",
    "Fallback",
    "FindingChange",
    "FindingKind",
    "GateVerdict",
    "Intent",
    "Interrupted",
    "Kind",
    "LogLost",
    "ModeStep",
    "Outcome",
    "Payload",
    "Problem",
    "ProblemKind",
    "Proposal",
    "Record",
    "Startup",
    "VerifyReport",
    "explain",
    "export_row",
    "key_from_env",
    "new_decision_id",
    "proposals",
    "render",
    "summary",
]
