"""The `Planner` protocol shared by the rules planner and the LLM planner."""

from __future__ import annotations

from typing import Protocol

from tools.actions import Plan
from tools.model import ClusterState


class Planner(Protocol):
    name: str

    def plan(self, state: ClusterState, signals: object) -> Plan:
        """Propose actions for this observation; never executes anything."""
        ...
