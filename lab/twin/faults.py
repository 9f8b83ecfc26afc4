"""Fault injection: a share of API requests fails as an overloaded or flaky API server does.

Each resource request (discovery and the twin's own hooks excepted) draws from a seeded RNG:
with probability `rate` it fails before it touches anything, with one of the chosen kinds:
`5xx` (500 or 503), `409` (a write conflict; on writes only, reads get a 5xx instead),
`429` (with Retry-After) or `timeout` (the answer is held back `timeout_s`, then 504).
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lab.twin.store import ApiError

FaultKind = Literal["5xx", "409", "429", "timeout"]


class FaultSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rate: float = Field(default=0.0, ge=0, le=1)
    kinds: tuple[FaultKind, ...] = ("5xx", "409", "429", "timeout")
    timeout_s: float = Field(default=1.0, ge=0)
    seed: int = 0
    methods: tuple[str, ...] = ("GET", "POST", "PUT", "PATCH", "DELETE")
    """Which requests may fail (writes only: a reproducible sequence whatever the reads do)."""


class Faults:
    def __init__(self, settings: FaultSettings | None = None) -> None:
        self.configure(settings or FaultSettings())
        self.injected: dict[str, int] = {}

    def configure(self, settings: FaultSettings) -> None:
        self.settings = settings
        self.rng = random.Random(settings.seed)

    def draw(self, method: str) -> tuple[FaultKind, ApiError] | None:
        s = self.settings
        if method not in s.methods:
            return None
        if s.rate <= 0 or not s.kinds or self.rng.random() >= s.rate:
            return None
        kind = self.rng.choice(s.kinds)
        if kind == "409" and method == "GET":
            kind = "5xx"
        self.injected[kind] = self.injected.get(kind, 0) + 1
        if kind == "5xx":
            code = self.rng.choice((500, 503))
            reason = "InternalError" if code == 500 else "ServiceUnavailable"
            return kind, ApiError(code, reason, f"injected fault: HTTP {code}")
        if kind == "409":
            return kind, ApiError(
                409,
                "Conflict",
                "Operation cannot be fulfilled: the object has been modified; please apply "
                "your changes to the latest version and try again (injected fault)",
            )
        if kind == "429":
            return kind, ApiError(
                429,
                "TooManyRequests",
                "injected fault: too many requests",
                {"retryAfterSeconds": 1},
            )
        return kind, ApiError(504, "Timeout", "injected fault: the server timed out")
