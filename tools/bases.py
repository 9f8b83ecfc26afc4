"""`Frozen`: the base of every world model — immutable, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Base of every world model: immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")
