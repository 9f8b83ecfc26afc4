"""The rotation journal: a durable, append-only record of every mode-rotation transaction.

A rotation changes what serves traffic on a node group, so a process killed half-way must leave
behind enough to finish the job: which transaction was running, from which mode to which, what
the outgoing workloads looked like before they were touched, and which step had started. Each
entry is one JSON line, flushed and fsync'd before the step it announces runs, so that what the
journal says started may have happened, and what it says is done has.

Each line carries the CRC-32 of its JSON after a tab (`{json}\t{crc:08x}`), so a torn write is
told from a damaged file. A torn last line (the process died while writing it: no newline, or a
checksum that does not match) is skipped on read — the step it announced had not started yet,
because a step starts only after its entry is durable — and cut off before anything is
appended, so a new entry never lands on the fragment (that once broke `mode status|journal|
resume` and `run` for good). What was cut is kept in `cut` for the caller to log and record. A
bad line anywhere else is damage, refused with its place. Lines without a checksum (written by
an earlier steward) are read as they are.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Literal, TypedDict, Unpack

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from tools.errors import InvalidInput, TemporaryError

EntryKind = Literal["begin", "step", "end"]
StepStatus = Literal["started", "done", "failed"]
StepName = Literal["preflight", "drain", "switch", "probe", "commit", "rollback", "fallback"]
Result = Literal["committed", "refused", "rolled_back", "fallback", "failed"]
"""How a transaction ended: committed to the target; refused at preflight (nothing changed);
rolled back to the previous mode; fell back to whatever could serve; failed (nothing serves)."""

JOURNAL_FILE = "journal.jsonl"
TAIL_READ = 65_536


def _line(entry_json: str) -> str:
    return f"{entry_json}\t{zlib.crc32(entry_json.encode()):08x}\n"


def _payload(line: str) -> str | None:
    """The JSON of a complete line whose checksum holds (or that has none); None if torn."""
    if not line.endswith("\n"):
        return None
    text = line[:-1]
    body, tab, crc = text.rpartition("\t")
    if not tab:
        return text  # a line from before checksums
    return body if f"{zlib.crc32(body.encode()):08x}" == crc else None


class JournalEntry(BaseModel):
    """One line of the journal."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    txn: str
    seq: int
    at: datetime
    kind: EntryKind
    step: StepName | None = None
    status: StepStatus | None = None
    result: Result | None = None
    message: str = ""
    detail: dict[str, JsonValue] = {}


class EntryFields(TypedDict, total=False):
    """What an entry says beyond its transaction, kind and time: `JournalEntry`'s other fields,
    as `Journal.append` and the saga's steps pass them on."""

    step: StepName | None
    status: StepStatus | None
    result: Result | None
    message: str
    detail: dict[str, JsonValue]


class Transaction(BaseModel):
    """A transaction read back from the journal: its entries in order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    txn: str
    entries: tuple[JournalEntry, ...]

    @property
    def begin(self) -> JournalEntry:
        return self.entries[0]

    @property
    def end(self) -> JournalEntry | None:
        last = self.entries[-1]
        return last if last.kind == "end" else None

    @property
    def finished(self) -> bool:
        return self.end is not None

    def last_step(self) -> JournalEntry | None:
        """The latest step entry (started, done or failed), or None before any step."""
        steps = [e for e in self.entries if e.kind == "step"]
        return steps[-1] if steps else None

    def step_status(self, step: StepName) -> StepStatus | None:
        """The latest status recorded for `step`, or None if it never started."""
        found: StepStatus | None = None
        for entry in self.entries:
            if entry.kind == "step" and entry.step == step:
                found = entry.status
        return found


class Journal:
    """An fsync'd JSON-lines file of rotation transactions in a data directory."""

    def __init__(self, path: Path, on_cut: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.on_cut = on_cut
        """Called with the message of each torn tail cut off (the agent logs and records it)."""
        self._cache: list[JournalEntry] | None = None
        """Entries read once under the lock and extended by `append` (None: read the file)."""
        self.cut: list[str] = []
        """What `cut_torn_tail` removed, one message each, for the caller to log and record."""

    @classmethod
    def open(cls, data_dir: Path, on_cut: Callable[[str], None] | None = None) -> Journal:
        """The journal of `data_dir` (created on first write)."""
        return cls(data_dir / "modes" / JOURNAL_FILE, on_cut)

    def new_txn(self) -> str:
        return uuid.uuid4().hex[:12]

    def append(
        self, txn: str, kind: EntryKind, at: datetime, **fields: Unpack[EntryFields]
    ) -> JournalEntry:
        """Write one entry durably: write, flush, fsync."""
        entry = JournalEntry(txn=txn, seq=self._next_seq(txn), at=at, kind=kind, **fields)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.cut_torn_tail()
        line = _line(entry.model_dump_json())
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        if self._cache is not None:
            self._cache.append(entry)
        return entry

    def entries(self) -> Iterator[JournalEntry]:
        """Every complete entry in file order; a torn last line is skipped."""
        if self._cache is not None:
            yield from self._cache
            return
        yield from self._read()

    def _read(self) -> Iterator[JournalEntry]:
        if not self.path.exists():
            return
        lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        for number, line in enumerate(lines, start=1):
            body = _payload(line)
            if body is None and number == len(lines):
                return  # torn write: the step it announced never started
            try:
                if body is None:
                    raise ValueError("its checksum does not match its content")
                yield JournalEntry.model_validate(json.loads(body))
            except (ValueError, ValidationError) as exc:
                raise InvalidInput(
                    f"{self.path}:{number}: rotation journal entry is unreadable ({exc}); "
                    "move the file aside to start a fresh journal"
                ) from exc

    def cut_torn_tail(self) -> str | None:
        """Cut a torn last line off the file (fsynced); the message says what was cut."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return None
        if size == 0:
            return None
        with self.path.open("rb") as handle:
            # The last line only: an entry is far shorter than TAIL_READ (else read it all).
            offset = max(0, size - TAIL_READ)
            handle.seek(offset)
            data = handle.read()
            found = data.rfind(b"\n", 0, len(data) - 1)
            if found < 0 and offset > 0:
                handle.seek(0)
                data, offset = handle.read(), 0
                found = data.rfind(b"\n", 0, len(data) - 1)
        tail = data[found + 1 :].decode("utf-8", errors="replace")
        if _payload(tail) is not None:
            return None
        start = offset + found + 1
        with self.path.open("r+b") as handle:
            handle.truncate(start)
            handle.flush()
            os.fsync(handle.fileno())
        message = (
            f"{self.path}: cut a torn last line ({size - start} byte(s) at offset {start}: "
            f"{tail[:60]!r}); the step it announced never started"
        )
        self.cut.append(message)
        if self.on_cut is not None:
            self.on_cut(message)
        return message

    def transactions(self) -> list[Transaction]:
        """Every transaction in the journal, oldest first."""
        grouped: dict[str, list[JournalEntry]] = {}
        for entry in self.entries():
            grouped.setdefault(entry.txn, []).append(entry)
        return [Transaction(txn=txn, entries=tuple(es)) for txn, es in grouped.items()]

    def last(self) -> Transaction | None:
        found = self.transactions()
        return found[-1] if found else None

    def unfinished(self) -> Transaction | None:
        """The transaction a crash left open, if any (at most one runs at a time)."""
        last = self.last()
        return last if last is not None and not last.finished else None

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the journal's lock: one rotation at a time per data directory.

        Raises TemporaryError when another process holds it (a retry later may succeed).
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with (self.path.parent / "rotation.lock").open("a") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise TemporaryError(
                    f"{self.path.parent}: another rotation holds the lock; wait for it to end"
                ) from exc
            try:
                self.cut_torn_tail()
                self._cache = list(self._read())
                yield
            finally:
                self._cache = None
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _next_seq(self, txn: str) -> int:
        if self._cache is not None:
            # Transactions never interleave (one at a time, under the lock): a transaction's
            # entries are the journal's tail.
            last = self._cache[-1] if self._cache else None
            return last.seq + 1 if last is not None and last.txn == txn else 0
        return 1 + max((e.seq for e in self._read() if e.txn == txn), default=-1)
