"""A question put to the model: one thing to deliberate, its premise and the rules' fallback.

Which parts of a decision become questions is the loop's call (agent/loop/questions.py); what a
question says to the model, and what the rules would do about it, is defined here, where the
planners that answer it read it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from tools.actions import Action


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


QuestionKind = Literal["rotation", "lending", "anomaly", "marked"]

ASKS: dict[QuestionKind, str] = {
    "rotation": (
        "Demand favours another serving mode. Decide whether to rotate the node pair now "
        "(rotate_mode) or not (an empty plan): a two-node mode must win at something two "
        "separate models cannot, and the rotation's downtime must pay. Look at the modes, the "
        "demand and the preflight before you decide."
    ),
    "lending": (
        "A higher-priority pool wants cards that a lower-priority pool with demand of its own "
        "holds: their SLOs conflict. Decide which pool yields the cards (the scale actions), "
        "or that neither does (an empty plan)."
    ),
    "anomaly": (
        "An anomaly was found that no rule fixes. Decide what, if anything, to do about it "
        "(e.g. cordon a node whose accounting is wrong), or nothing (an empty plan)."
    ),
    "marked": (
        "The policy asks for these actions to be deliberated before they run. Decide whether "
        "to run them, others, or nothing (an empty plan)."
    ),
}


class Question(_Model):
    """One thing to deliberate: its premise (`key`), the facts asked about, and what the rules
    would do about it (the fallback when the model cannot answer)."""

    kind: QuestionKind
    key: str
    facts: dict[str, JsonValue] = {}
    """What the question is about, from the observation (untrusted text: fenced when sent)."""
    rules_actions: tuple[Action, ...] = ()

    @property
    def ask(self) -> str:
        """The instruction (Steward's own words, never cluster text)."""
        return ASKS[self.kind]

    def line(self) -> str:
        return f"{self.kind} ({self.key})"
