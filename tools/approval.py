"""A person's answer to an action that needed approval: the one model of it in every layer.

The loop resumes a waiting decision with it, the gate judges the answer again at execution, a
rotation's saga records who allowed it, and the audit log writes it down
(agent.audit.ApprovalRecord, which adds where in the log it belongs). An answer that never came
within the policy's `approval.expires_after` is an `expired` one, with no principal.

Older data dirs wrote it under other field names: `by` for `principal` (LangGraph checkpoints)
and `via` for `channel` (rotation journals). Both are still read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

Channel = Literal["cli", "slack"]
"""Where an answer came from; the channel vouches for who sent it."""
Answer = Literal["approved", "denied", "expired"]
"""A person's yes or no; or expired: nobody answered in time."""


class Approval(BaseModel):
    """One answer to one waiting decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: Answer = "approved"
    principal: str = Field(validation_alias=AliasChoices("principal", "by"))
    """Who answered, as the policy's approver groups name them ("" when it expired)."""
    at: datetime
    """When it was answered (or expired), on the cluster's clock."""
    channel: Channel = Field(default="cli", validation_alias=AliasChoices("channel", "via"))
    sender: str = ""
    """Who the channel vouches sent it: the OS user on cli, the user id on slack."""
    reason: str = ""
    """What the person said with it, or why it expired."""

    @property
    def approved(self) -> bool:
        return self.answer == "approved"
