"""What assess remembers between ticks, and its file in the data dir (loop.json).

`Memory` holds the little that turns one observation into facts over time: when each pool was
last busy, recent queue samples, the capacity model's forecast state, recent denials. It belongs
to the loop, not to one decision, so it lives in the loop context and in the data dir, outside
the checkpoints; the file is replaced whole at each save so that a crash leaves the old one or
the new one.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.capacity.forecast import Holt, Misses
from agent.capacity.windows import Quiet, Windows
from agent.support.datadir import MEMORY_NAME, replace_file
from agent.support.dbfile import DamagedFile

MEMORY_SAMPLES = 12
"""How many queue-depth samples per workload the memory keeps for the demand trend."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SloMemory(_Model):
    """What the capacity model remembers of one workload between ticks."""

    read_at: float | None = None
    """POSIX time of the last reading folded in (a scrape is counted once)."""
    holt: Holt | None = None
    misses: Misses = Misses()
    """The forecast's record one horizon ahead (agent.capacity.forecast.widened)."""
    windows: Windows | None = None
    quiet: Quiet = Quiet()
    needs: tuple[tuple[float, int], ...] = ()
    """(POSIX time, replicas the sizing asked for), oldest first, over the keep time."""
    correction: float = 1.0
    drift_told: bool = False
    """A drift was reported and has not ended since (told once)."""
    waiting: int = 0
    """Readings in a row that found requests waiting."""


class WorkloadMemory(_Model):
    calm_since: datetime | None = None
    """Since when the queue wait has been below the scale-down watermark (None: not calm)."""
    samples: tuple[tuple[float, float], ...] = ()
    """Recent (POSIX time, queue depth) readings, oldest first, bounded."""
    slo: SloMemory | None = None


class Memory(_Model):
    """What the loop remembers between ticks; persisted in the data dir after each tick."""

    workloads: dict[str, WorkloadMemory] = {}
    last_busy: dict[str, datetime] = {}
    """Per pool: the last observation that found it busy (or could not tell it was idle)."""
    watching_since: datetime | None = None
    """When the loop first observed; a pool never seen busy has been idle since then."""
    mode_favoured_since: datetime | None = None
    mode_favoured: str | None = None
    mode_seen_at: datetime | None = None
    """The last observation that found demand favouring `mode_favoured`."""
    mode_because: str = ""
    denied: dict[str, datetime] = {}
    """Actions the guard denied lately (keyed by their JSON without the reason), and until when
    each is held back (agent.loop.holds.hold_until)."""


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
    """Replace the memory file at once (written aside, then renamed over it)."""
    record = {"tick": tick, "memory": memory.model_dump(mode="json")}
    replace_file(data_dir / MEMORY_NAME, json.dumps(record).encode())
