"""The Notifier seam: steward.yaml's `notifiers` pick the channels; a failing channel never stops
a decision; the log notifier writes one structlog line per notice."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import structlog
from structlog.testing import capture_logs

from agent.support.notices import FanOut, LogNotifier, Notice, notifier_for, notify_safely
from tests.approvals.conftest import Recorder
from tools.errors import InvalidInput

AT = datetime(2026, 3, 2, 8, 6, tzinfo=UTC)
NOTICE = Notice(kind="needs_approval", decision_id="d-1", text="waits", at=AT)


class Broken:
    def notify(self, notice: Notice) -> None:
        raise ConnectionError("chat is down")


def test_the_log_notifier_writes_one_line_per_notice() -> None:
    structlog.reset_defaults()
    with capture_logs() as lines:
        LogNotifier().notify(NOTICE)
        LogNotifier().notify(NOTICE.model_copy(update={"kind": "refused_at_execution"}))
    assert [(line["event"], line["log_level"]) for line in lines] == [
        ("needs_approval", "info"),
        ("refused_at_execution", "warning"),
    ]
    assert lines[0]["decision"] == "d-1" and lines[0]["text"] == "waits"


def test_a_failing_channel_is_logged_and_the_others_still_get_the_notice() -> None:
    kept = Recorder()
    structlog.reset_defaults()
    with capture_logs() as lines:
        FanOut(Broken(), kept).notify(NOTICE)
        notify_safely(Broken(), NOTICE)
    assert kept.kinds() == ["needs_approval"]
    assert [line["event"] for line in lines] == ["notifier failed", "notifier failed"]


def test_configured_names_choose_the_channels() -> None:
    assert isinstance(notifier_for(["log"]), LogNotifier)
    both = notifier_for(["log", "chat"], {"chat": Recorder})
    assert isinstance(both, FanOut) and len(both.notifiers) == 2
    with pytest.raises(InvalidInput, match="notifiers: slack is not available"):
        notifier_for(["log", "slack"])
