"""What reaches people through the notifier a chat channel installs: decisions that wait (from
the loop, once each) and the pause and resume, from any process (from the daemon). Findings
appearing and clearing are the loop's (tests/loop/test_findings.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agent.daemon.runtime import Runtime
from agent.support import pause
from agent.support.notices import Notice
from lab.sim.backend import SimCluster
from policies.loader import load_policy
from tests.chatops.conftest import APPROVE_BURST, SPIKE


class Recorder:
    def __init__(self) -> None:
        self.notices: list[Notice] = []

    def notify(self, notice: Notice) -> None:
        self.notices.append(notice)

    def kinds(self) -> list[str]:
        return [n.kind for n in self.notices]


def test_the_daemon_announces_what_changed(tmp_path: Path) -> None:
    data_dir = tmp_path / "steward"
    recorder = Recorder()
    sim = SimCluster.open(data_dir, SPIKE)
    with Runtime.open(data_dir, sim, load_policy(APPROVE_BURST)) as runtime:
        runtime.start()
        runtime.notifier = recorder
        waited = [r.decision_id for r in (runtime.tick(15.0) for _ in range(6)) if r.waiting]
        assert waited
        asked = [n for n in recorder.notices if n.kind == "needs_approval"]
        assert [n.decision_id for n in asked] == waited
        assert "place" in asked[0].text
        pause.pause(data_dir, pause.Pause(by="homelab-owner", at=datetime.now(UTC)))
        runtime.tick(15.0)
        runtime.tick(15.0)
        pause.resume(data_dir)
        runtime.tick(15.0)
        runtime.ctx.inbox.answer(waited[0], approved=True, by="homelab-owner", reason="",
                                 at=datetime.now(UTC))  # fmt: skip
        for _ in range(10):
            runtime.tick(15.0)
    kinds = recorder.kinds()
    assert kinds.count("paused") == 1 and kinds.count("resumed") == 1
    assert kinds.index("paused") < kinds.index("resumed")
    assert "paused by homelab-owner" in recorder.notices[kinds.index("paused")].text
