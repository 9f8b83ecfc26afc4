"""The data directory's own files: their names, the checks on them, and the daemon's lock.

One steward runs per data directory: `take_lock` holds `steward.lock` (or names the process
that does), and read-only commands that must not overlap with a daemon use `locked`. What each
file holds is its owner's business (the loop's memory: agent/signals/memory.py).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from agent.support import lockfile
from agent.support.dbfile import DamagedFile
from agent.support.durable import fsync_dir
from tools.errors import InvalidInput

LOCK_NAME = "steward.lock"
CHECKPOINT_DB = "checkpoints.db"
"""The loop's graph threads (LangGraph's checkpoints)."""
MEMORY_NAME = "loop.json"


STATE_FILES = (
    "audit.db",
    "audit.head",
    "audit.signing",
    CHECKPOINT_DB,
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


M = TypeVar("M", bound=BaseModel)


def read_model_file(
    path: Path, model: type[M], what: str, fix: str, refused: type[InvalidInput] = DamagedFile
) -> M | None:
    """The `model` a `replace_file` left at `path`, None when there is no file. A file that is
    there but cannot be read (a directory, no permission) or is not one (garbage) is never taken
    for an absent one: `refused` names the file, `what` it holds and the `fix`."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise refused(f"{path}: {what} cannot be read ({exc.strerror}); {fix}") from exc
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise refused(
            f"{path}: {what} is damaged ({exc.error_count()} problem(s), e.g. "
            f"{exc.errors()[0]['msg']}); {fix}"
        ) from exc


def replace_file(path: Path, data: bytes) -> None:
    """Put `data` at `path` durably and at once: written aside, fsynced, renamed over the old
    file, the directory fsynced, so a crash or a power cut leaves the old file or the new one,
    never a torn one."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)
