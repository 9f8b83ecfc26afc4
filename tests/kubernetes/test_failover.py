"""Two replicas of `steward run --backend kubernetes` against one twin: one leads and acts, the
other stands by; kill -9 of the leader and the standby leads within a lease duration and one
retry period, and acts. No action runs twice, none by both: the two decision logs together
hold every decision once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.bench.replicas import (
    LEASE_S,
    RETRY_S,
    Replica,
    executed_in,
    two_replicas,
    wait_for,
)
from lab.twin.server import Twin

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Twin, Replica, Replica, Path]]:
    with two_replicas(tmp_path) as replicas:
        yield replicas


def test_kill_9_of_the_leader_hands_over_within_the_lease(
    pair: tuple[Twin, Replica, Replica, Path],
) -> None:
    _, a, b, policy = pair
    a.start(policy)
    wait_for("steward-0 leads", a.leading, 60)
    b.start(policy)
    wait_for("steward-1 is up, standing by", lambda: (b.health() or {}).get("ready"), 60)
    assert not b.leading() and 'steward_leader{identity="steward-1"} 0.0' in b.metrics()
    assert 'steward_leader{identity="steward-0"} 1.0' in a.metrics()
    assert (b.health() or {})["leader"]["holder"] == "steward-0"
    wait_for("steward-0 acts", lambda: len(a.executed()) >= 2, 60, every=0.5)

    a.kill()
    killed = time.monotonic()
    led = wait_for("steward-1 leads", b.leading, LEASE_S + 2 * RETRY_S + 5, every=0.05)
    takeover = led - killed
    before = len(b.executed())
    wait_for("steward-1 acts", lambda: len(b.executed()) > before, 60, every=0.5)
    b.stop()

    assert takeover <= LEASE_S + RETRY_S + 0.5, f"took over {takeover:.2f} s after the kill"
    first, second = executed_in(a.data), executed_in(b.data)
    assert not before, "the standby acted while the other replica led"
    ran = first + second
    decisions = [(d, i) for _, d, i, _ in ran]
    assert len(decisions) == len(set(decisions)), "an action ran twice"
    assert not {d for _, d, _, _ in first} & {d for _, d, _, _ in second}, "a decision in both"
    assert max(t for t, *_ in first) < min(t for t, *_ in second)
    print(f"takeover {takeover:.2f} s after kill -9; {len(first)} + {len(second)} actions")
