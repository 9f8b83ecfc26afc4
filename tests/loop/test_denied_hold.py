"""A denied action is not proposed again every tick: the log records a denial, not a ticker."""

from __future__ import annotations

from pathlib import Path

from agent.loop.holds import DENIED_HOLD_S
from tests.loop.conftest import DATA, open_runtime
from tests.loop.test_scale_up import SPIKE


def test_a_denied_placement_is_held_back_until_the_hold_ends(data_dir: Path) -> None:
    ticks = int(DENIED_HOLD_S // 15) + 6
    with open_runtime(data_dir, SPIKE, DATA / "frozen.yaml") as runtime:
        reports = [runtime.tick(15.0) for _ in range(ticks)]
        intents = runtime.ctx.audit.records(kind="intent")
    denied = [r for r in reports if r.verdicts and set(r.verdicts) == {"deny"}]
    assert len(denied) == len(intents) == 2, [(r.tick, r.actions) for r in denied]
    first, second = denied
    assert (second.tick - first.tick) * 15.0 >= DENIED_HOLD_S
    assert all(not r.executed for r in reports)
