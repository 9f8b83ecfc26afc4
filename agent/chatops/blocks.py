"""Block Kit for Steward's Slack messages: answers, approval requests, their updates, digests.

Slack shows at most 3,000 characters in a section and 50 blocks in a message; answers are kept
short on purpose (a headline and a few lines) and what is longer goes to the message's thread,
which `split` decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agent.approvals.inbox import PendingDecision

Block = dict[str, Any]
APPROVE_ID = "steward_approve"
DENY_ID = "steward_deny"
SHORT_LINES = 12
"""An answer longer than this many lines shows its first lines; the rest goes to a thread."""
SECTION_CHARS = 2900


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_CHARS]}}


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:SECTION_CHARS]}]}


def answer(title: str, lines: Sequence[str]) -> list[Block]:
    """A headline and its lines as one or two sections."""
    blocks = [section(f"*{escape(title)}*")]
    if lines:
        blocks.append(section("\n".join(escape(line) for line in lines)))
    return blocks


def split(lines: Sequence[str]) -> tuple[list[str], list[str]]:
    """The lines shown in the answer, and those threaded under it."""
    if len(lines) <= SHORT_LINES:
        return list(lines), []
    head = list(lines[: SHORT_LINES - 1])
    return [*head, f"… {len(lines) - len(head)} more line(s) in the thread"], list(
        lines[len(head) :]
    )


def chunks(lines: Sequence[str], size: int = SECTION_CHARS) -> list[str]:
    """Lines joined into texts of at most `size` characters (thread replies)."""
    out: list[str] = []
    current = ""
    for line in lines:
        piece = escape(line)[:size]
        if current and len(current) + len(piece) + 1 > size:
            out.append(current)
            current = ""
        current = f"{current}\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def approval_request(p: PendingDecision) -> list[Block]:
    """The message a waiting decision is posted as, with its Approve and Deny buttons."""
    lines = [
        f"• {escape(a.describe())} — {escape(m)}"
        for a, m in zip(p.actions, p.messages, strict=True)
    ]
    return [
        section(f"*Decision `{p.decision_id}` waits for approval*\n" + "\n".join(lines)),
        context(f"since {_when(p.created_at)} · `/steward why {p.decision_id}`"),
        {
            "type": "actions",
            "block_id": f"steward_answer:{p.decision_id}",
            "elements": [
                _button("Approve", APPROVE_ID, p.decision_id, "primary"),
                _button("Deny", DENY_ID, p.decision_id, "danger"),
            ],
        },
    ]


def approval_settled(p: PendingDecision, state: str) -> list[Block]:
    """The approval message once answered, run, refused or expired: no buttons left."""
    lines = [f"• {escape(a.describe())}" for a in p.actions]
    return [
        section(f"*Decision `{p.decision_id}`*\n" + "\n".join(lines)),
        context(state),
    ]


def answered_line(p: PendingDecision) -> str:
    """Who answered a decision still to be resumed, and when."""
    who = f"<@{p.answered_by}>" if p.channel == "slack" else f"`{p.answered_by}`"
    why = f": {escape(p.reason)}" if p.status == "denied" and p.reason else ""
    when = _when(p.answered_at) if p.answered_at else "?"
    after = "runs on the next tick" if p.status == "approved" else "dropped on the next tick"
    return f"{p.status} by {who} via {p.channel} at {when}{why} · {after}"


def _button(text: str, action_id: str, value: str, style: str) -> Block:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": text},
        "action_id": action_id,
        "value": value,
        "style": style,
    }


def _when(at: datetime) -> str:
    return f"{at:%Y-%m-%d %H:%M:%S %Z}".strip()


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
