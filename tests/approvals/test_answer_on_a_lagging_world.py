"""An answer is judged on the world as of the decision log, not on a save that lags it.

The daemon saves the simulated cluster between ticks and after its actions, not when a decision
starts to wait (at 1,000 nodes that save is ~50 ms of the tick). A process killed right after
logging a waiting decision leaves the saved world a tick older than that decision. `steward
approve` brings it up to the log's last time before judging the answer, as a restart does:
without that, the gate takes the older world for one that went back and the answer is told it
will be refused.
"""

from __future__ import annotations

import json
from pathlib import Path

from agent.audit import Outcome
from lab.sim.store import path_in
from tests.approvals.conftest import cli
from tests.loop.conftest import APPROVE_BURST, open_runtime
from tests.loop.test_approval import SPIKE


def test_an_answer_on_a_saved_world_older_than_the_decision_is_taken_and_carried_out(
    data_dir: Path,
) -> None:
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        for _ in range(6):
            before = path_in(data_dir).read_bytes()  # the world as saved before this tick
            report = runtime.tick(15.0)
            if report.waiting:
                break
        else:
            raise AssertionError("the spike never asked for approval")
        decision = report.decision_id
    # As a kill right after the intent leaves it: the world saved before the decision's tick.
    path_in(data_dir).write_bytes(before)
    code, out = cli(
        "approve", decision, "--as", "homelab-owner", "--data-dir", str(data_dir),
        "--policy", str(APPROVE_BURST), "--json",
    )  # fmt: skip
    assert code == 0, out
    answered = json.loads(out)
    assert answered["status"] == "answered", answered
    with open_runtime(data_dir, SPIKE, APPROVE_BURST) as runtime:
        runtime.tick(15.0)
        records = runtime.ctx.audit.decision(decision)
    outcome = next(r.payload for r in records if isinstance(r.payload, Outcome))
    assert [r.executed for r in outcome.results] == [True], outcome
    assert outcome.succeeded, outcome
