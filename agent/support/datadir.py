"""The data directory's own files: the lock one daemon holds, and the loop's memory.

One steward runs per data directory: `take_lock` holds `steward.lock` (or names the process
that does), and read-only commands that must not overlap with a daemon use `locked`. The
loop's memory between ticks (holds, dwell, what was favoured) is `loop.json`, replaced whole at
each save so that a crash leaves the old one or the new one.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from agent.loop.state import Memory
from agent.support import lockfile
from agent.support.dbfile import DamagedFile
from tools.errors import InvalidInput

LOCK_NAME = "steward.lock"
MEMORY_NAME = "loop.json"


STATE_FILES = (
    "audit.db",
    "audit.head",
    "audit.signing",
    "checkpoints.db",
    "inbox.db",
    "sim.json",
    "pause.json",
    LOCK_NAME,
    MEMORY_NAME,
    "run.json",
)
"""The files Steward keeps in a data dir (their owners' names)."""
SYSTEM_DIRS = frozenset(
    Path(p)
    for p in (
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/media",
        "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
    )
)  # fmt: skip
SYSTEM_TREES = tuple(Path(p) for p in ("/bin", "/boot", "/dev", "/etc", "/lib", "/proc",
                                       "/sbin", "/sys", "/usr"))  # fmt: skip


def check_data_dir(data_dir: Path) -> None:
    """Refuse a data dir that resolves to / or a system directory (a symlink to / once had 14
    state files written into it), and state files in it of the wrong type (a directory where
    audit.head or pause.json should be): each named with what to do, never a traceback."""
    real = data_dir.resolve()
    if real in SYSTEM_DIRS or any(real.is_relative_to(tree) for tree in SYSTEM_TREES):
        shown = f"{data_dir} (which resolves to {real})" if real != data_dir else str(data_dir)
        raise InvalidInput(
            f"data dir {shown} is a system directory: Steward would write its log and state "
            "files there. Point --data-dir (or STEWARD_DATA_DIR) at a directory of its own, "
            "e.g. ./.steward"
        )
    for name in STATE_FILES:
        path = data_dir / name
        if path.exists() and not path.is_file():
            what = "a directory" if path.is_dir() else "not a regular file"
            raise DamagedFile(
                f"{path} is {what}, not the state file Steward keeps there: something else "
                "was put in its place. Move it away (restore the file from a backup if it "
                "held state), then run again"
            )


def take_lock(data_dir: Path) -> int:
    """The data dir's daemon lock; InvalidInput naming the holder if another process has it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_NAME
    return lockfile.take(
        path,
        lambda holder: InvalidInput(
            f"another steward (pid {holder}) runs on {data_dir} (lock {path}); stop it first, "
            "or give this one its own --data-dir"
        ),
    )


@contextlib.contextmanager
def locked(data_dir: Path) -> Iterator[None]:
    fd = take_lock(data_dir)
    try:
        yield
    finally:
        lockfile.release(fd)


def read_tick_and_memory(data_dir: Path) -> tuple[int, Memory]:
    """The last tick's number and the loop's memory as it left them (0 and empty at first)."""
    path = data_dir / MEMORY_NAME
    if not path.is_file():
        return 0, Memory()
    try:
        data = json.loads(path.read_text())
        return int(data["tick"]), Memory.model_validate(data["memory"])
    except (ValueError, TypeError, KeyError) as exc:  # JSON, a missing key, a wrong shape
        why = _why(exc)
        raise DamagedFile(
            f"{path}: the loop's memory is damaged ({why}). It holds soft state only (holds, "
            "dwell, when each pool was last busy): move it away to start with an empty memory, "
            "and the agent waits out every idle time again before scaling anything to zero"
        ) from exc


def _why(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc} key"
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in ("memory", *first["loc"]))
        return f"{where}: {first['msg']}"
    return str(exc).splitlines()[0]


def read_memory(data_dir: Path) -> Memory:
    """The loop's memory as the last tick left it (for `steward plan`)."""
    return read_tick_and_memory(data_dir)[1]


def write_memory(data_dir: Path, tick: int, memory: Memory) -> None:
    """Replace the memory file at once (written aside, then renamed over the old one)."""
    path = data_dir / MEMORY_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"tick": tick, "memory": memory.model_dump(mode="json")}))
    os.replace(tmp, path)
