"""What a primitive answers: done or not, what it changed, what a probe or a drain found.

These are the backends' return values (tools/backends/base.py names the seams that return them);
they live apart so that the simulator can build them without knowing the seams.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ActionResult(BaseModel):
    """What one primitive did (or, in dry-run, would do)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    dry_run: bool
    message: str
    changed: bool = False


class Check(BaseModel):
    """One condition checked and what was found: a post-condition after acting (replicas
    ready, a probe, tokens/s) in the decision log, or an expectation of a scored case."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    ok: bool
    detail: str = ""


class ProbeResult(BaseModel):
    """A real request through a workload's serving endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workload: str
    ok: bool
    ready_replicas: int
    tokens_per_s: float | None = None
    context_length: int | None = None
    latency_s: float | None = None
    message: str = ""


DrainOutcome = Literal["drained", "deadline", "failed"]


class DrainResult(ActionResult):
    outcome: DrainOutcome = "drained"
    in_flight_aborted: int = 0


class DrainProgress(BaseModel):
    """Where a started drain stands: what is still on the node and still being served."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    replicas_left: int = Field(ge=0)
    """Replicas (pods) of Steward's workloads still on the node."""
    in_flight: int = Field(ge=0)
    """Requests those replicas are still serving."""
    message: str = ""

    @property
    def done(self) -> bool:
        return self.replicas_left == 0
