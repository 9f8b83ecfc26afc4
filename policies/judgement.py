"""What the policy engine answers: one Verdict per action, plan-level Findings, the Judgement.

A verdict never clamps silently: a denied action carries the rule ids that denied it, one human
sentence, and — where some smaller step would have passed — `allowed_instead`, that action.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tools.actions import Action

Decision = Literal["allow", "deny", "needs_approval"]


class Verdict(BaseModel):
    """The engine's answer for one action of a plan."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    """Position of the action in the plan (0-based)."""
    action: Action
    decision: Decision
    rule_ids: tuple[str, ...]
    """The rules that decided: those that denied, those that ask for approval, or those passed."""
    message: str
    allowed_instead: Action | None = None
    """What would have been allowed in place of a denied action, if anything."""
    approvers: tuple[str, ...] = ()
    """For needs_approval: the groups whose members may approve it."""
    retry_at: datetime | None = None
    """For deny: when every rule that denied it would allow it again, where they all know
    (cooldowns, the hourly budget); None: not known (a window, a protection, a limit)."""


class Finding(BaseModel):
    """Something about the plan as a whole: a combined effect, a duplicate, a budget crossed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule_id: str
    message: str
    actions: tuple[int, ...]
    """The plan positions involved."""


class Judgement(BaseModel):
    """The verdict on every action of a plan, in plan order, and the plan-level findings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    now: datetime
    verdicts: tuple[Verdict, ...] = ()
    findings: tuple[Finding, ...] = ()

    def _with(self, decision: Decision) -> tuple[Action, ...]:
        return tuple(v.action for v in self.verdicts if v.decision == decision)

    @property
    def allowed(self) -> tuple[Action, ...]:
        """The actions that may run now, in plan order."""
        return self._with("allow")

    @property
    def needs_approval(self) -> tuple[Action, ...]:
        return self._with("needs_approval")

    @property
    def denied(self) -> tuple[Action, ...]:
        return self._with("deny")

    @property
    def all_allowed(self) -> bool:
        return all(v.decision == "allow" for v in self.verdicts)

    def rule_ids(self) -> set[str]:
        """Every rule id that appears in a verdict or finding."""
        return {r for v in self.verdicts for r in v.rule_ids} | {f.rule_id for f in self.findings}
