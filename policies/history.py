"""What Steward did recently and when each pool was last seen busy: the memory of the rules.

Cooldowns, the hourly change budget and idle-before-zero need the past; the engine stays pure
by receiving it as a `History` value. The loop builds one from the audit log (executed actions
with their times) and folds every observation into it with `History.observed`, which remembers
when each pool was last seen busy — or could not be seen idle, since missing metrics never count
as idleness.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field, field_validator

from policies.durations import aware
from policies.model import Policy
from tools.actions import Action, NoOp
from tools.effects import action_key
from tools.model import ClusterState


class Executed(BaseModel):
    """One action that was carried out, when, and how many cards it changed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: datetime
    action: Action
    cards_changed: int = Field(default=0, ge=0)

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return aware(value)

    @property
    def key(self) -> str:
        return action_key(self.action)


class History(BaseModel):
    """Executed actions (any order) and the last time each pool was busy.

    `watching_since` is when observation began: a pool never seen busy since then has been idle
    that long. None: nothing observed yet, so no pool counts as idle.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    executed: tuple[Executed, ...] = ()
    last_busy: dict[str, datetime] = {}
    watching_since: datetime | None = None

    @field_validator("last_busy")
    @classmethod
    def _aware_times(cls, value: dict[str, datetime]) -> dict[str, datetime]:
        return {pool: aware(at) for pool, at in value.items()}

    @field_validator("watching_since")
    @classmethod
    def _aware_since(cls, value: datetime | None) -> datetime | None:
        return None if value is None else aware(value)

    @classmethod
    def of(cls, executed: Iterable[Executed]) -> History:
        return cls(executed=tuple(executed))

    def record(self, action: Action, at: datetime, cards_changed: int = 0) -> History:
        """This history with one more executed action (NoOps are not kept)."""
        if isinstance(action, NoOp):
            return self
        entry = Executed(at=at, action=action, cards_changed=cards_changed)
        # A new object, not model_copy: model_copy would carry the cached indexes along.
        return History(
            executed=(*self.executed, entry),
            last_busy=self.last_busy,
            watching_since=self.watching_since,
        )

    def observed(self, state: ClusterState, policy: Policy) -> History:
        """This history after one more observation: busy (or unreadable) pools are stamped."""
        from policies.activity import pool_busy

        at = aware(state.observed_at)
        last_busy = dict(self.last_busy)
        for pool in policy.pools:
            if pool_busy(state, pool, policy) is not False:
                last_busy[pool] = max(at, last_busy.get(pool, at))
        since = self.watching_since if self.watching_since is not None else at
        return History(executed=self.executed, last_busy=last_busy, watching_since=since)

    def idle_since(self, pool: str) -> datetime | None:
        """Since when the pool has been idle as far as observed; None if unknown."""
        if self.watching_since is None:
            return None
        busy = self.last_busy.get(pool)
        return self.watching_since if busy is None else max(busy, self.watching_since)

    @cached_property
    def _times(self) -> list[datetime]:
        return sorted(e.at for e in self.executed)

    @cached_property
    def _by_key(self) -> dict[str, list[Executed]]:
        out: dict[str, list[Executed]] = {}
        for entry in sorted(self.executed, key=lambda e: e.at):
            out.setdefault(entry.key, []).append(entry)
        return out

    def count_since(self, since: datetime) -> int:
        """Executed actions after `since` (those stamped in the future included)."""
        return len(self._times) - bisect_right(self._times, since)

    def last_on(self, key: str, action_type: str | None = None) -> Executed | None:
        """The latest executed action on `key` (of `action_type`, if given)."""
        for entry in reversed(self._by_key.get(key, [])):
            if action_type is None or entry.action.type == action_type:
                return entry
        return None

    def next_slot(self, now: datetime, window: timedelta, limit: int) -> datetime | None:
        """When the count of actions in the trailing `window` drops below `limit` again."""
        recent = [t for t in self._times if t > now - window]
        if len(recent) < limit:
            return now
        if limit <= 0:
            return None
        return recent[len(recent) - limit] + window
