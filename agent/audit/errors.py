"""Exceptions of the decision log.

    tools.errors.PermanentError
    └── AuditError             the log cannot be opened or written as asked (a second writer,
                               a signed log without its key, an outcome for an unknown decision)

A tampered log is not an exception: `AuditLog.verify()` returns a report naming each problem.
"""

from __future__ import annotations

from tools.errors import PermanentError


class AuditError(PermanentError):
    """The decision log refused an operation; the message names the log, the record and the fix."""
