"""SlackNotifier: the Notifier seam's Slack side — into the durable outbox, never onto the wire.

`notify` only writes the notice to chatops.db's outbox (a local SQLite insert) and wakes the
sender, which sends it when Slack answers (agent/chatops/sender.py). So a tick never waits on
Slack, a Slack that is down for an hour costs nothing but delay, and a notice written before a
kill -9 is sent after the restart. Each notice also goes to the next notifier (the log's), so
the daemon's log has every one whatever Slack does. A decision waiting for approval gets its own
message with buttons from the sender; its notice only wakes the sender early.
"""

from __future__ import annotations

import threading

from agent.chatops.store import ChatopsStore
from agent.support.notices import Notice, Notifier


class SlackNotifier:
    """Queues notices for Slack; passes each on to `then` (e.g. the LogNotifier)."""

    def __init__(
        self, store: ChatopsStore, wake: threading.Event, then: Notifier | None = None
    ) -> None:
        self.store = store
        self.wake = wake
        self.then = then

    def notify(self, notice: Notice) -> None:
        if self.then is not None:
            self.then.notify(notice)
        if notice.kind != "needs_approval":
            self.store.enqueue(notice.at.isoformat(), notice.model_dump_json())
        self.wake.set()
