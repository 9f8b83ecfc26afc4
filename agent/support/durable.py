"""Names in the data dir that outlive a power cut.

A file's data is on disk once the file is fsynced; its name — made, renamed over another, linked
in — only once the directory holding it is fsynced too. Whatever writes a state file whole
(written aside, then renamed or linked into place) ends with `fsync_dir`.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(directory: Path) -> None:
    """Put `directory`'s entries on disk: a name just made, renamed or linked in it stays."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
