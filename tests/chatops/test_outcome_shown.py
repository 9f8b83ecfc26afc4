"""After a button approval, the message says what really came of the action, from the log: a
rotation that runs for several ticks shows as running, then as committed — never as "refused
at execution" while the log shows it ran (tests against the Web API stub)."""

from __future__ import annotations

from pathlib import Path

from agent.audit import Outcome
from agent.signals.model import Signals
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from policies.loader import DEFAULT_POLICY
from tests.chatops.conftest import OWNER, open_rig
from tests.chatops.slack_stub import SlackStub
from tools.actions import Plan, RotateMode
from tools.model import ClusterState

SPLIT_ASKED = Scenario(
    name="split-asked-for",
    mode="cluster",
    demand=tuple(
        PoissonDemand(target=w, rate_per_min=12, input_tokens=3000, output_tokens=600)
        for w in ("resident-a", "resident-b")
    ),
)


class RotateOnce:
    """A planner that asks for one rotation into split, then for nothing."""

    name = "rotate-once"

    def __init__(self) -> None:
        self.asked = False

    def plan(self, state: ClusterState, signals: object) -> Plan:
        if self.asked or not isinstance(signals, Signals):
            return Plan(rationale="nothing to change", planner=self.name)
        self.asked = True
        action = RotateMode(target_mode="split", reason="the test asks for it")
        return Plan(actions=(action,), rationale="rotate", planner=self.name)


def _policy(tmp_path: Path) -> Path:
    """The default policy, its rotations asked of the owners at any hour and without dwell."""
    text = DEFAULT_POLICY.read_text()
    text = text.replace('    window: {start: "08:00", end: "20:00"}\n', "")
    text = text.replace("min_dwell: 30m", "min_dwell: 0s")
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def test_a_committed_rotation_approved_by_button_says_it_committed(
    tmp_path: Path, stub: SlackStub, secrets: None
) -> None:
    rig = open_rig(
        tmp_path / "steward",
        stub,
        scenario=SPLIT_ASKED,
        policy_path=_policy(tmp_path),
        planner=RotateOnce(),
    )
    try:
        decision = rig.tick_until_waiting()
        ts = rig.approval_message(decision)
        assert rig.press(decision, OWNER, ts, approve=True) == 200
        rig.stub.wait_for(lambda: rig.pending(decision).status == "approved" or None)
        outcome = None
        for _ in range(40):  # the rotation drains, switches and probes over several ticks
            rig.runtime.tick(15.0)
            rig.service.sender.wake.set()
            records = rig.runtime.ctx.audit.decision(decision)
            outcome = next((r.payload for r in records if isinstance(r.payload, Outcome)), None)
            if outcome is not None:
                break
        assert outcome is not None and outcome.results[0].executed and outcome.results[0].ok
        final = rig.stub.wait_for(lambda: _updates(stub, ts, "ran: ok") or None)
        assert "rotate to split" in final[-1] or "split" in final[-1]
        texts = _updates(stub, ts, "")
        assert not [t for t in texts if "refused at execution" in t], texts
    finally:
        rig.close()


def _updates(stub: SlackStub, ts: str, words: str) -> list[str]:
    return [
        c.params["text"]
        for c in stub.of("chat.update")
        if c.params.get("ts") == ts and words in c.params.get("text", "")
    ]
