"""`ChannelSaver`: the graph's SQLite checkpoints, each channel's value stored once per version.

LangGraph's SqliteSaver writes every checkpoint whole, every value of the state inside it. A
decision's state grows step by step — the signals (~50 KB at 1,000 nodes), then the plan and its
verdicts (~100 KB for 200 actions) — so each step serialized and wrote again everything the
steps before it had, and each value twice besides: once as the step's write, once in the
checkpoint after it. Here a checkpoint names its channels' versions and each (channel, version)
is a row of its own, written once (as LangGraph's Postgres saver does); its bytes are the step's
write of the same object when there was one. A checkpoint read back gets its values from those
rows. Checkpoints written whole by earlier versions still load as they are, and the first step
a process takes on such a thread writes every channel it has.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

_BLOBS = """CREATE TABLE IF NOT EXISTS steward_channels (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    channel TEXT NOT NULL,
    version TEXT NOT NULL,
    type TEXT NOT NULL,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
)"""
EMPTY = "empty"
"""The type of a channel's row at a version with no value (LangGraph's own convention)."""


class _Remembering:
    """The saver's serializer, remembering what it made of each value until asked to forget:
    a step's writes are serialized just before the checkpoint that holds the same objects."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde
        self._lock = threading.Lock()
        self._made: dict[int, tuple[object, tuple[str, bytes]]] = {}
        """By the value's identity; the value is held, so its id is not reused meanwhile."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        found = self.serde.dumps_typed(obj)
        with self._lock:
            self._made[id(obj)] = (obj, found)
        return found

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.serde.loads_typed(data)

    def known(self, obj: object) -> tuple[str, bytes] | None:
        with self._lock:
            found = self._made.get(id(obj))
        return found[1] if found is not None and found[0] is obj else None

    def forget(self) -> None:
        with self._lock:
            self._made = {}


class ChannelSaver(SqliteSaver):
    """SqliteSaver whose checkpoints keep their values apart, one row per channel version."""

    def __init__(self, conn: sqlite3.Connection, *, serde: SerializerProtocol) -> None:
        super().__init__(conn, serde=serde)
        self.remembering = _Remembering(self.serde)
        self.serde = self.remembering
        self._stored: set[tuple[str, str, str, str]] = set()
        """(thread, namespace, channel, version) rows this process knows are in the database."""
        self._tables = threading.Lock()
        self._ready = False

    def _tables_ready(self) -> None:
        with self._tables:
            if not self._ready:
                with self.cursor() as cur:
                    cur.execute(_BLOBS)
                self._ready = True

    # -- writing ------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._tables_ready()
        thread_id = str(config["configurable"]["thread_id"])
        namespace = str(config["configurable"].get("checkpoint_ns", ""))
        values = checkpoint["channel_values"]
        rows: list[tuple[str, str, str, str, str, bytes | None]] = []
        remembering = self.remembering
        for channel, version in checkpoint["channel_versions"].items():
            key = (thread_id, namespace, channel, str(version))
            if key in self._stored:
                continue  # a version this thread has stored: the same value
            if channel in values:
                value = values[channel]
                kind, blob = remembering.known(value) or remembering.serde.dumps_typed(value)
            else:
                kind, blob = EMPTY, None
            rows.append((*key, kind, blob))
        if rows:
            with self.cursor() as cur:
                cur.executemany(
                    "INSERT OR REPLACE INTO steward_channels (thread_id, checkpoint_ns, channel, "
                    "version, type, value) VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
            self._stored.update((row[0], row[1], row[2], row[3]) for row in rows)
        remembering.forget()
        bare: Checkpoint = {**checkpoint, "channel_values": {}}
        return super().put(config, bare, metadata, new_versions)

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id)
        self._tables_ready()
        with self.cursor() as cur:
            cur.execute("DELETE FROM steward_channels WHERE thread_id = ?", (str(thread_id),))
        self._stored = {key for key in self._stored if key[0] != str(thread_id)}

    # -- reading ------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found = super().get_tuple(config)
        return None if found is None else self._with_values(found)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        # Read whole first: SqliteSaver holds its lock while its own listing is iterated.
        listed = [*super().list(config, filter=filter, before=before, limit=limit)]
        for found in listed:
            yield self._with_values(found)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        # SqliteSaver's own reads values inline in the checkpoints; the base class's walks
        # get_tuple, which puts them back.
        return BaseCheckpointSaver.get_delta_channel_history(self, config=config, channels=channels)

    def _with_values(self, found: CheckpointTuple) -> CheckpointTuple:
        checkpoint = found.checkpoint
        if checkpoint.get("channel_values"):
            return found  # written whole, by an earlier version of Steward
        self._tables_ready()
        thread_id = str(found.config["configurable"]["thread_id"])
        namespace = str(found.config["configurable"].get("checkpoint_ns", ""))
        versions = checkpoint.get("channel_versions", {})
        values: dict[str, Any] = {}
        if versions:
            with self.cursor(transaction=False) as cur:
                cur.execute(
                    "SELECT channel, version, type, value FROM steward_channels "
                    "WHERE thread_id = ? AND checkpoint_ns = ?",
                    (thread_id, namespace),
                )
                rows = {(channel, version): (kind, blob) for channel, version, kind, blob in cur}
            for channel, version in versions.items():
                row = rows.get((channel, str(version)))
                if row is not None and row[0] != EMPTY:
                    values[channel] = self.serde.loads_typed((row[0], row[1] or b""))
            self._stored.update((thread_id, namespace, c, v) for c, v in rows)
        return found._replace(checkpoint={**checkpoint, "channel_values": values})
