"""The two bases of the world model: `Frozen` (every model) and `Versioned` (a node, a workload).

A versioned object carries its producer's token for its content, so that what is derived from it
is worked out once per version and reused across observations, also when each is parsed afresh
(tools.derived); `versions_of` names the whole content, readings merged by a metric source
included. tools.model builds the world on these.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Protocol, Self

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Base of every world model: immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


_versions = itertools.count(1)


def new_version() -> str:
    """A version no other object of this process has had: for producers without one of their
    own (the simulator), or to make theirs unique (a resourceVersion joined to it)."""
    return f"v{next(_versions)}"


class Versioned(Frozen):
    """A world object its producer tracks by version (a `Node`, a `Workload`).

    The version names one content of the object, so that what is derived from it can be worked
    out once per version and reused by later observations, whether they share the object or
    parse it afresh from JSON. A metric source that replaces the readings of an object it did
    not produce keeps the producer's `version` and gives the object a `readings_version` of its
    own: what is derived from the object's shape (labels, taints, cards, placement) is then
    reused while the readings change every tick, and what is derived from readings keys on both
    (`versions_of`). Versions are producers' tokens, not content: equality and
    `ClusterState.digest` leave them out. A copy with changes gets both versions "" (unknown)
    unless it is given them, and an unknown version is never reused: a cache then works the
    fact out again.
    """

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        if update and ("version" not in update or "readings_version" not in update):
            update = {"version": "", "readings_version": "", **update}
        return super().model_copy(update=update, deep=deep)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = self.__dict__, other.__dict__
        if mine.get("version") == theirs.get("version") and mine.get(
            "readings_version"
        ) == theirs.get("readings_version"):
            return super().__eq__(other)
        return _content(mine) == _content(theirs)

    __hash__ = None  # type: ignore[assignment]  # labels and annotations are dicts anyway


TOKENS = frozenset({"version", "readings_version"})


def _content(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k not in TOKENS and not k.startswith("_")}


class _Tokens(Protocol):
    @property
    def version(self) -> str: ...

    @property
    def readings_version(self) -> str: ...


def versions_of(obj: _Tokens) -> str:
    """The token naming an object's whole content, readings included: its producer's version,
    joined to the version of the readings a metric source merged into it ("" when unknown)."""
    version, readings = obj.version, obj.readings_version
    if not version or not readings:
        return version
    return f"{version}+{readings}"
