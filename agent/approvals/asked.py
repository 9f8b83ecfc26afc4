"""Proposals from questions: an answer to `steward ask` / `@steward` that would change something.

The model that answers a person's question has only read-only tools; when the answer is a
change, it comes back as a proposal (agent/planners/llm/asker.py). A proposal is not run by
whoever asked: it is handed to the agent, the one writer of the cluster and of the log, which
runs it through the graph as a decision of its own (agent/loop/nodes.py) — judged by the guard
on a fresh observation, recorded, and put in the approval inbox. Every action of it waits for a
person, even one the policy alone would let the loop run: a model answering a chat message does
not get to change the cluster on its own say-so. A denied action is refused with the guard's
reason; nothing runs without an approval given with `steward approve ID` or a Slack button.

The hand-over is a file per proposal in DATA_DIR/asked/, so the CLI can hand one to a running
daemon (which takes it at its next tick) or, when none runs, take it itself.

Who may answer such a request: the approver groups of the policy rules that ask for approval of
the action; for an action no rule asks approval for (the policy would allow it), any member of
the policy's approver groups (`may_answer`).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies.judgement import Verdict
from policies.model import Policy
from tools.actions import Action
from tools.approval import Channel
from tools.model import ClusterState

ASKED_DIR = "asked"
RULE_ID = "ask.proposal"
"""The rule id of the guard's verdict that sends an asked-for action to a person."""
log = structlog.get_logger("steward.loop")


class AskedProposal(BaseModel):
    """What a model proposed in answer to a person's question, on its way to the guard."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    decision_id: str = Field(pattern=r"^d-[0-9a-f]{12}$")
    """The decision it becomes: its approval id (`steward approve ID`)."""
    question: str = Field(min_length=1, max_length=1000)
    actions: tuple[Action, ...] = Field(min_length=1)
    model: str | None = None
    asked_by: str = Field(min_length=1)
    """Who asked, as the channel knows them: the OS user, the Slack user id."""
    channel: Channel
    asked_at: datetime
    cited: tuple[str, ...] = ()
    """The decision ids the answer relies on."""

    def rationale(self) -> str:
        return (
            f"proposed by the model in answer to {self.asked_by} (via {self.channel}): "
            f"{self.question[:300]}"
        )


def hand_over(data_dir: Path, proposal: AskedProposal) -> Path:
    """Leave `proposal` for the agent (written aside, then renamed: never read half-written)."""
    folder = data_dir / ASKED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{proposal.decision_id}.json"
    aside = path.with_suffix(".part")
    aside.write_text(proposal.model_dump_json())
    os.replace(aside, path)
    return path


def take_handed(data_dir: Path) -> list[AskedProposal]:
    """The proposals handed over, oldest first, each taken once (its file removed); a file
    that does not parse is left aside as `.bad` and logged, never run."""
    folder = data_dir / ASKED_DIR
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("d-*.json"), key=lambda p: p.stat().st_mtime_ns)
    taken: list[AskedProposal] = []
    for path in files:
        try:
            taken.append(AskedProposal.model_validate_json(path.read_bytes()))
        except (ValidationError, OSError) as exc:
            log.warning("asked proposal unreadable; left aside", file=str(path), error=str(exc))
            path.replace(path.with_suffix(".bad"))
            continue
        path.unlink(missing_ok=True)
    return taken


def may_answer(policy: Policy, principal: str, action: Action, state: ClusterState) -> bool:
    """Whether `principal` may approve or deny `action` waiting in the inbox (module
    docstring): the groups of the approval rules that cover it, or, for an action no approval
    rule covers (only a proposal from a question waits so), any approver of the policy."""
    if policy.approval_rules_for(action, state):
        return policy.may_approve(principal, action, state)
    return principal in policy.approvers.allow_list()


def answerers(policy: Policy, action: Action, state: ClusterState) -> tuple[str, ...]:
    """The groups whose members may answer `action` (see `may_answer`)."""
    return policy.approver_groups(action, state) or tuple(policy.approvers.groups)


def held_for_a_person(
    v: Verdict, rule_id: str, why: str, policy: Policy, state: ClusterState
) -> Verdict:
    """`v` with an action the policy would allow made to wait for a person all the same,
    under `rule_id`, saying `why`; a denied or already waiting one is returned as it is."""
    if v.decision != "allow":
        return v
    return v.model_copy(
        update={
            "decision": "needs_approval",
            "rule_ids": (rule_id, *v.rule_ids),
            "message": f"{why}: a person approves it before it runs (the policy alone would "
            f"allow it: {v.message})",
            "approvers": answerers(policy, v.action, state),
        }
    )


def waits_for_a_person(v: Verdict, policy: Policy, state: ClusterState) -> Verdict:
    """The guard's verdict on an action proposed in answer to a question: one the policy
    would allow waits for a person all the same; a denied one stays denied, with its reason."""
    return held_for_a_person(
        v, RULE_ID, "proposed by the model in answer to a question", policy, state
    )
