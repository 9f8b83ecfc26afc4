"""A daemon ticking in real time sweeps the whole heap as it starts waiting for its next tick
(`Runtime.rest`), so that no decision pauses for a full collection; a run flat out on a
simulated clock has no wait and does not stop for one."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from agent.daemon.runtime import Runtime
from lab.sim.backend import SimCluster
from lab.sim.scenario import Scenario
from policies.loader import DEFAULT_POLICY, load_policy


def _full_collections(data_dir: Path, speed: float) -> tuple[int, int]:
    """Over two ticks run at `speed`: (the waits that began with `rest`, full collections
    outside the decisions)."""
    runtime = Runtime.open(
        data_dir, SimCluster.open(data_dir, Scenario(mode="cluster")), load_policy(DEFAULT_POLICY)
    )
    deciding = [False]
    counts = [0, 0]

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            counts[1 if deciding[0] else 0] += 1

    decide, rest = runtime.decide, runtime.rest
    rested = [0]

    def counted_rest() -> None:
        rested[0] += 1
        rest()

    def timed_decide() -> Any:
        deciding[0] = True
        try:
            return decide()
        finally:
            deciding[0] = False

    runtime.decide = timed_decide  # type: ignore[method-assign]
    runtime.rest = counted_rest  # type: ignore[method-assign]
    gc.callbacks.append(count)
    try:
        with runtime:
            runtime.start()
            runtime.run(ticks=2, interval_s=15.0, speed=speed)
    finally:
        gc.callbacks.remove(count)
    return rested[0], counts[0]


def test_a_daemon_in_real_time_collects_while_it_waits(tmp_path: Path) -> None:
    rested, collected = _full_collections(tmp_path / "d", speed=1000.0)
    assert rested == 2
    assert collected >= 2  # one as each wait began, outside any decision


def test_a_run_flat_out_does_not_stop_to_collect(tmp_path: Path) -> None:
    rested, _ = _full_collections(tmp_path / "d", speed=0.0)
    assert rested == 0  # CPython's own collector still runs when its thresholds say
