"""End to end on the simulator: the render pool goes to zero after its idle time, burst-llm
borrows its cards, renders queue, and priority takes the cards back within a tick or two.

A real Runtime over a real data dir, the default policy, the rules planner; the render jobs are
the simulator's own (a job queue with GPU time per job), not a doctored observation.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from agent.audit import Intent
from agent.daemon.report import TickReport
from lab.sim.demand import BurstArrivals, BurstDemand, RenderDemand
from lab.sim.scenario import Scenario
from tests.loop.conftest import open_runtime

RENDERS_AT_S = 1500.0
LENDING = Scenario(
    name="lending",
    seed=3,
    replicas={"render": 1, "burst-llm": 0},
    demand=(
        BurstDemand(target="burst-llm", rate_per_min=40, at_s=60, duration_s=2400,
                    input_tokens=1500, output_tokens=500),
        RenderDemand(target="render", gpu_s_per_job=60,
                     arrivals=BurstArrivals(rate_per_min=2, at_s=RENDERS_AT_S, duration_s=300)),
    ),
)  # fmt: skip


BURST_GROWS = ("place a replica of burst-llm", "scale burst-llm to 1", "scale burst-llm to 2")
"""burst-llm given cards: one placement, or a scale sized from its queue."""


def _first(reports: list[TickReport], prefix: str | tuple[str, ...], after: int = 0) -> TickReport:
    found = [r for r in reports if r.tick > after and any(a.startswith(prefix) for a in r.actions)]
    assert found, f"no decision with {prefix!r} after tick {after}"
    return found[0]


def test_render_to_zero_burst_borrows_and_priority_takes_the_cards_back(data_dir: Path) -> None:
    with open_runtime(data_dir, LENDING) as runtime:
        reports = [runtime.tick(15.0) for _ in range(130)]
        intents = {
            r.payload.decision_id: r.payload
            for r in runtime.ctx.audit.records(kind="intent")
            if isinstance(r.payload, Intent)
        }
        state = runtime.ctx.cluster.observe()
    start = LENDING.start

    # Render is idle from the start: to zero after the pool's 10 minutes, not before.
    zero = _first(reports, "scale render to 0")
    assert intents[zero.decision_id].observed_at - start >= timedelta(minutes=10)
    assert zero.executed == 1

    # Burst-llm borrows the freed cards.
    borrow = _first(reports, BURST_GROWS, after=zero.tick)
    assert borrow.executed == 1

    # Renders queue: one decision scales burst-llm down and render up, within two ticks.
    taken = _first(reports, "scale render to 1", after=borrow.tick)
    taken_at = intents[taken.decision_id].observed_at - start
    assert timedelta(seconds=RENDERS_AT_S) < taken_at <= timedelta(seconds=RENDERS_AT_S + 120)
    intent = intents[taken.decision_id]
    by_action = {p.action.describe(): p for p in intent.proposals}
    down = by_action["scale burst-llm to 0 replica(s)"]
    up = by_action["scale render to 1 replica(s)"]
    assert down.verdict == "allow" and down.rule_ids == ("pool.priority_preemption",)
    assert up.verdict == "allow" and up.rule_ids == ("policy.within_limits",)
    assert taken.executed == 2
    # While render waits for the cards burst-llm's replicas are freeing, burst-llm (queued, at
    # zero) does not grab them back.
    after = [r for r in reports if taken.tick < r.tick <= taken.tick + 20]
    assert not any(a.startswith(BURST_GROWS) for r in after for a in r.actions)

    # The render replica comes up on the cards burst-llm gave back, and works through the jobs.
    render, burst = state.workload("render"), state.workload("burst-llm")
    assert render is not None and burst is not None
    assert render.ready_replicas == 1 and burst.desired_replicas == 0

    verify = subprocess.run(
        [sys.executable, "-m", "agent.cli", "audit", "verify", "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr
    explain = subprocess.run(
        [sys.executable, "-m", "agent.cli", "audit", "explain", taken.decision_id,
         "--data-dir", str(data_dir)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert explain.returncode == 0, explain.stderr
    assert "allowed by pool.priority_preemption" in explain.stdout
    assert "pool render (priority 60)" in explain.stdout
