"""What the daemon announces tick by tick: each finding once when it appears and once when it
clears (its figures may move in between), decisions that wait, the pause from any process."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agent.daemon import pause
from agent.daemon.announce import finding_key
from agent.daemon.notifier import Notice
from agent.daemon.runtime import Runtime
from policies.loader import load_policy
from tests.chatops.conftest import APPROVE_BURST, SPIKE
from tools.backends.sim import SimCluster


class Recorder:
    def __init__(self) -> None:
        self.notices: list[Notice] = []

    def notify(self, notice: Notice) -> None:
        self.notices.append(notice)

    def kinds(self) -> list[str]:
        return [n.kind for n in self.notices]


def test_figures_do_not_make_a_new_finding() -> None:
    assert finding_key("burst-llm: queue 12, wait 3.5 s") == finding_key(
        "burst-llm: queue 13, wait 4.0 s"
    )
    assert finding_key("burst-llm: idle for 300 s") != finding_key("render: idle for 300 s")


def test_the_daemon_announces_what_changed(tmp_path: Path) -> None:
    data_dir = tmp_path / "steward"
    recorder = Recorder()
    sim = SimCluster.open(data_dir, SPIKE)
    with Runtime.open(data_dir, sim, load_policy(APPROVE_BURST)) as runtime:
        runtime.start()
        runtime.notifier = recorder
        waited = [r.decision_id for r in (runtime.tick(15.0) for _ in range(6)) if r.waiting]
        assert waited
        appeared = [n for n in recorder.notices if n.kind == "finding_appeared"]
        assert len(appeared) == 1 and appeared[0].text.startswith("burst-llm:")
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
    cleared = [n.text for n in recorder.notices if n.kind == "finding_cleared"]
    # Once the replica serves, the finding clears, told with its last figures.
    assert finding_key(appeared[0].text) in [finding_key(t) for t in cleared]
    kinds = recorder.kinds()
    assert kinds.count("paused") == 1 and kinds.count("resumed") == 1
    assert kinds.index("paused") < kinds.index("resumed")
    assert "paused by homelab-owner" in recorder.notices[kinds.index("paused")].text
