"""A test hook that kills the process with SIGKILL at a named point of a rotation.

Crash safety is only shown by crashing: `STEWARD_TEST_CRASH_AT=rotate:switch` makes the process
that reaches that point die as `kill -9` would kill it, with no cleanup, no flush and no
`finally`. The tests then start a new process on the same data directory and check that the
journal brings the transaction to a commit or a rollback. Unset, the hook does nothing.
"""

from __future__ import annotations

import os
import signal

CRASH_ENV = "STEWARD_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """Die here, like kill -9, if the environment names this point."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
