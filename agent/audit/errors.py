"""Exceptions of the decision log.

    tools.errors.PermanentError
    └── AuditError             the log cannot be opened or written as asked (a second writer,
        │                      a signed log without its key, an outcome for an unknown decision)
        └── LogRefused         (also an InvalidInput) the log as found may not be written on:
                               lost, cut, replaced, laundered or damaged; nothing was written

A tampered log is not an exception: `AuditLog.verify()` returns a report naming each problem.
"""

from __future__ import annotations

from tools.errors import InvalidInput, PermanentError


class AuditError(PermanentError):
    """The decision log refused an operation; the message names the log, the record and the fix."""


class LogRefused(AuditError, InvalidInput):
    """The writer will not open the log as it found it — lost, cut, replaced, its MACs stripped,
    damaged — and nothing was written: the message names the evidence and what to do. Bad input
    to the agent (exit 2): the state it was given is not one it may build on."""
