"""Exceptions of the planners.

    PlannerFailed     a planner could not produce a usable plan (endpoint down, timeout,
                      unparsable or invalid answer); the loop falls back to the rules planner
                      and records the reason

Any planner other than the rules planner signals failure by raising `PlannerFailed(reason)`;
the loop catches exactly this, never a bare Exception, so a bug still surfaces as a bug.
"""

from __future__ import annotations


class PlannerFailed(Exception):
    """A planner gave up; `reason` says why in one line (it goes into the decision log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
