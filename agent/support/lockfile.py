"""One writer per file: an exclusive, non-blocking flock that records the holder's pid.

The daemon's data-dir lock and the decision log's writer lock are both this; the kernel drops
the lock when its holder dies, even under kill -9, so a crashed writer never blocks a restart.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable
from pathlib import Path


def take(path: Path, refused: Callable[[str], Exception]) -> int:
    """Hold `path` exclusively and write our pid in it; the descriptor is the lock.

    If another process holds it, raise `refused(holder_pid)` — the caller words the error.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise refused(holder) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def release(fd: int) -> None:
    """Let the lock go (closing the descriptor would do it too)."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(fd)
