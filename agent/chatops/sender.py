"""The sender: what Steward writes to Slack on its own, sent from a thread of its own.

Two duties, each picked up from durable state every `poll_s`, so that a restart or a kill -9
loses nothing and a Slack that does not answer never holds up a tick:
- approval messages: every decision waiting in the inbox is posted once to the channel with its
  Approve / Deny buttons (chatops.db keeps the message's ts); when the inbox moves on — answered
  from the CLI, resumed by the daemon, expired — the message is updated to say who, when and
  what came of it (read from the decision log);
- the outbox: notifications written there by the SlackNotifier are sent oldest first, at most
  `max_messages_per_minute`; what is over that is folded into one digest message. When Slack
  fails (unreachable, 429, 5xx) every unsent notification waits, and the wait doubles from
  1 s up to `retry_max_s`; a refusal that retrying cannot fix (a bad token, an unknown channel)
  is logged and retried at the longest wait, never dropped.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import structlog
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from agent.approvals.inbox import Inbox, PendingDecision
from agent.audit import AuditError, AuditLog
from agent.audit.explanations import explain as explain_decision
from agent.chatops import blocks
from agent.chatops.store import ChatopsStore, Queued
from agent.daemon.slack_settings import SlackSettings
from agent.support.notices import Notice

WINDOW_S = 60.0
RUNNING = "running"
"""What the message of a decision resumed but not finished shows (chatops.db `shown`)."""
DIGEST_LINES = 20
log = structlog.get_logger("steward.slack")


class SlackDown(Exception):
    """Slack did not take a call: unreachable, rate-limited or failing (retry later)."""


class Sender:
    """Posts approvals and notifications to the channel; `run_once` is one pass."""

    def __init__(
        self,
        settings: SlackSettings,
        client: WebClient,
        store: ChatopsStore,
        data_dir: Path,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.client = client
        self.store = store
        self.data_dir = data_dir
        self.now = now
        self.wake = threading.Event()
        self._stop = threading.Event()
        self._sent: deque[float] = deque()
        self._failures = 0
        self._retry_at = 0.0
        self._thread: threading.Thread | None = None

    def reachable(self) -> bool:
        """Whether the last pass reached Slack's Web API (True before the first)."""
        return self._failures == 0

    # -- the thread -------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="steward-slack", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # the sender must outlive any one bad pass; the log has it
                log.exception("slack sender pass failed")
            self.wake.wait(self.settings.poll_s)
            self.wake.clear()

    # -- one pass ---------------------------------------------------------------------------------

    def run_once(self) -> None:
        """Post and update approval messages, then send what is due from the outbox."""
        if self.now() < self._retry_at:
            return
        try:
            self.sync_approvals()
            self.flush()
        except SlackDown as exc:
            self._failures += 1
            wait = min(2.0 ** (self._failures - 1), self.settings.retry_max_s)
            self._retry_at = self.now() + wait
            log.warning("slack unreachable; retrying later", error=str(exc), wait_s=wait)
        else:
            self._failures = 0

    def sync_approvals(self) -> None:
        inbox = Inbox.open(self.data_dir)
        try:
            waiting = inbox.listed("waiting")
            posted = {m.decision_id: m for m in self.store.messages()}
            for p in waiting:
                if p.decision_id not in posted and self.store.message(p.decision_id) is None:
                    sent = self._call(
                        self.client.chat_postMessage,
                        channel=self.settings.channel,
                        text=f"decision {p.decision_id} waits for approval",
                        blocks=blocks.approval_request(p),
                    )
                    self.store.posted(
                        p.decision_id, str(sent["channel"]), str(sent["ts"]), "waiting"
                    )
            for m in posted.values():
                found = inbox.get(m.decision_id)
                if found is None or found.status == m.shown:
                    continue
                text, final = self._settled_text(found)
                # A decision resumed but not finished (a rotation, a drain: long actions) shows
                # as running, and is looked at again until its outcome is in the log.
                shown = found.status if final else RUNNING
                if shown == m.shown:
                    continue
                self._call(
                    self.client.chat_update,
                    channel=m.channel,
                    ts=m.ts,
                    text=text,
                    blocks=blocks.approval_settled(found, text),
                )
                self.store.shown(m.decision_id, shown)
        finally:
            inbox.close()

    def _settled_text(self, p: PendingDecision) -> tuple[str, bool]:
        """What the message says now, and whether that is final: the real outcome of each
        action, read from the decision log (one still running says so, and is read again)."""
        if p.status in ("approved", "denied"):
            return blocks.answered_line(p), True
        if p.status != "resumed":
            text = f"{p.status} — nothing runs; the agent proposes it again if still needed"
            return text, True
        try:
            with AuditLog.open(self.data_dir, readonly=True) as audit:
                explanation = explain_decision(audit.decision(p.decision_id))
        except (AuditError, ValueError):
            return f"answered by {p.answered_by} via {p.channel}", False
        running = explanation.status == "in progress"
        parts: list[str] = []
        for a in explanation.actions:
            if a.verdict != "needs_approval":
                continue
            said = "; ".join(a.approvals) or "no answer recorded"
            if running and not a.executed:
                done = "running: its outcome follows when the decision is done"
            elif a.executed:
                done = f"ran: {'ok' if a.ok else 'FAILED'} — {a.outcome or ''}"
            elif a.approvals and a.approvals[0].startswith("approved"):
                done = f"refused at execution: {a.outcome or 'not run'}"
            else:
                done = f"not run: {a.outcome or 'dropped'}"
            parts.append(f"{a.description}: {said}; {done}")
        return blocks.escape(" · ".join(parts) or f"decision {explanation.status}"), not running

    def flush(self) -> None:
        """Send what is due from the outbox within the rate; fold the rest into a digest."""
        due = self.store.due(self.now())
        if not due:
            return
        cutoff = self.now() - WINDOW_S
        while self._sent and self._sent[0] < cutoff:
            self._sent.popleft()
        budget = self.settings.max_messages_per_minute - len(self._sent)
        if budget <= 0:
            return
        single = due if len(due) <= budget else due[: budget - 1]
        for queued in single:
            notice = Notice.model_validate_json(queued.notice)
            self._send(_line(notice), [queued])
        rest = due[len(single) :]
        if rest:
            notices = [Notice.model_validate_json(q.notice) for q in rest]
            lines = [_line(n) for n in notices[:DIGEST_LINES]]
            if len(notices) > DIGEST_LINES:
                lines.append(f"… and {len(notices) - DIGEST_LINES} more (`steward audit show`)")
            self._send(f"*digest of {len(notices)} notifications*\n" + "\n".join(lines), rest)

    def _send(self, text: str, queued: list[Queued]) -> None:
        ids = [q.id for q in queued]
        try:
            self._call(self.client.chat_postMessage, channel=self.settings.channel, text=text,
                       blocks=[blocks.section(text)])  # fmt: skip
        except SlackDown as exc:
            self.store.failed(ids, self._retry_next(queued), str(exc))
            raise
        except SlackApiError as exc:
            # Retrying at once cannot fix it (bad token, unknown channel): kept, tried slowly.
            log.error("slack refused a notification", error=str(exc))
            self.store.failed(ids, self.now() + self.settings.retry_max_s, str(exc))
            return
        self.store.sent(ids, self.now())
        self._sent.append(self.now())

    def _retry_next(self, queued: list[Queued]) -> float:
        attempts = max(q.attempts for q in queued) + 1
        return self.now() + min(2.0 ** (attempts - 1), self.settings.retry_max_s)

    def _call(self, method: Callable[..., object], **kwargs: object) -> dict[str, object]:
        try:
            response = method(**kwargs)
        except SlackApiError as exc:
            status = exc.response.status_code
            if status == 429 or status >= 500:
                raise SlackDown(f"slack answered {status}: {exc.response.get('error')}") from exc
            raise
        except (SlackClientError, OSError) as exc:
            raise SlackDown(f"slack unreachable: {exc}") from exc
        data = getattr(response, "data", None)
        return data if isinstance(data, dict) else {}


def _line(notice: Notice) -> str:
    label = notice.kind.replace("_", " ")
    about = f" `{notice.decision_id}`" if notice.decision_id else ""
    return f"[{notice.at:%H:%M:%S}] {label}{about}: {blocks.escape(notice.text)}"
