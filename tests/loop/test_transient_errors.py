"""A backend that fails for a while (HTTP 503s) stops neither the loop nor the decision."""

from __future__ import annotations

from pathlib import Path

from agent.daemon.runtime import Runtime
from lab.sim.backend import SimCluster
from lab.sim.faults import ApiErrors
from policies.loader import DEFAULT_POLICY, load_policy
from tests.loop.conftest import open_runtime
from tests.loop.test_scale_up import SPIKE


def test_a_few_failed_calls_are_retried_within_the_tick(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE) as runtime:
        runtime.world.inject(ApiErrors(count=2, operations=("observe", "place")))
        reports = [runtime.tick(15.0) for _ in range(6)]
        outcomes = runtime.ctx.audit.records(kind="outcome")
    first = next(r for r in reports if r.decided)
    assert first.executed == 1
    assert all(r.ok for o in outcomes for r in o.payload.results)  # type: ignore[union-attr]


def test_a_failed_action_is_recorded_and_proposed_again(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE) as runtime:
        runtime.world.inject(ApiErrors(count=4, operations=("place",)))  # one tick of attempts
        reports = [runtime.tick(15.0) for _ in range(6)]
    decided = [r for r in reports if r.decided]
    assert decided[0].executed == 0 and decided[1].executed == 1


def test_an_outage_longer_than_a_tick_resumes_the_same_decision(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE) as runtime:
        for _ in range(2):
            runtime.tick(15.0)
        # Observation fails for three ticks' worth of attempts (four per tick).
        runtime.world.inject(ApiErrors(count=9, operations=("observe",)))
        stalled = [runtime.tick(15.0) for _ in range(2)]
        assert runtime.ctx.telemetry.healthy()[1]["failing_ticks"] == 2
        later = [runtime.tick(15.0) for _ in range(4)]
        assert runtime.ctx.telemetry.healthy()[0]
        assert runtime.open_threads() == []
        assert runtime.ctx.audit.verify().ok
    assert stalled[0].decision_id == stalled[1].decision_id
    assert not any(r.executed for r in stalled)
    assert later[0].decision_id == stalled[0].decision_id
    assert sum(r.executed for r in later) >= 1


def test_health_turns_bad_after_three_failed_ticks_in_a_row(data_dir: Path) -> None:
    with open_runtime(data_dir, SPIKE) as runtime:
        runtime.world.inject(ApiErrors(count=40, operations=("observe",)))
        for expected in (True, True, False, False):
            runtime.tick(15.0)
            assert runtime.ctx.telemetry.healthy()[0] is expected
        failures = runtime.ctx.telemetry.registry.get_sample_value("steward_tick_failures_total")
    assert failures == 4


def test_a_decision_resumed_into_an_outage_goes_on_next_tick(data_dir: Path) -> None:
    """Found by the chaos soak: killed mid-decision, the agent came back while the cluster's API
    answered 503, and the resumed decision's error ended the process (exit 1). It is retried
    from the step that failed on the next tick instead, its intent left open, not closed."""
    with open_runtime(data_dir, SPIKE) as runtime:
        reports = [runtime.tick(15.0) for _ in range(2)]
        # The next decision stops at its first observation, as a kill -9 would leave it.
        runtime.world.inject(ApiErrors(count=4, operations=("observe",)))
        stopped = runtime.tick(15.0)
        assert runtime.open_threads() == [stopped.decision_id]
    sim = SimCluster.open(data_dir, SPIKE)
    sim.inject(ApiErrors(count=4, operations=("observe",)))  # still down as it comes back
    runtime = Runtime.open(data_dir, sim, load_policy(DEFAULT_POLICY))
    try:
        assert runtime.start() == []  # resumed, failed again, and neither ended nor closed
        assert runtime.threads.failed == [stopped.decision_id]
        later = [runtime.tick(15.0) for _ in range(4)]
        assert runtime.open_threads() == []
        assert runtime.ctx.audit.verify().ok
        interrupted = runtime.ctx.audit.records(kind="interrupted")
    finally:
        runtime.close()
    assert later[0].decision_id == stopped.decision_id
    assert interrupted == []
    assert sum(r.executed for r in [*reports, *later]) >= 1
