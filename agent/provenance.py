"""Which build of Steward this is: the version, and the commit it was built from.

The commit is read, in order, from `agent/COMMIT` (a file a build writes, e.g. a container build:
`git rev-parse HEAD > agent/COMMIT` before `COPY agent`), then from git when the package runs
from a checkout; a build with neither says only its version (`steward --version`).
"""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

from agent import __version__

PACKAGE = Path(__file__).resolve().parent
COMMIT_FILE = PACKAGE / "COMMIT"
GIT_TIMEOUT_S = 2.0


@cache
def commit() -> str | None:
    """The commit this code came from (12 hex digits, `-dirty` when the checkout has changes),
    or None when no build recorded it and no checkout is at hand."""
    try:
        recorded = COMMIT_FILE.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        recorded = ""
    if recorded:
        return recorded[:40]
    if not (PACKAGE.parent / ".git").exists():
        return None
    try:
        done = subprocess.run(
            [
                "git",
                "-C",
                str(PACKAGE.parent),
                "describe",
                "--always",
                "--dirty",
                "--abbrev=12",
                "--exclude",
                "*",
            ],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = done.stdout.strip()
    return found if done.returncode == 0 and found else None


def version_line() -> str:
    """`steward 0.1.0 (commit 1a2b3c4d5e6f)`, or `steward 0.1.0` when the commit is unknown."""
    found = commit()
    return f"steward {__version__}" + (f" (commit {found})" if found else "")
