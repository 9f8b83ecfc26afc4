"""A leader cut off from the API server (the twin stops answering its token) stops acting
before its Lease can expire: its last action is before the Lease's last renewTime plus its
duration, the standby takes over only after that, and acts; once the partition heals the old
leader stays a standby.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from kubernetes import client

from lab.bench.replicas import LEASE_S, RENEW_S, Replica, two_replicas, wait_for
from lab.twin.server import Twin
from tests.kubernetes.test_rbac import admin_api

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Twin, Replica, Replica, Path]]:
    with two_replicas(tmp_path) as replicas:
        yield replicas


def test_a_partitioned_leader_stops_acting_before_its_lease_expires(
    pair: tuple[Twin, Replica, Replica, Path], tmp_path: Path
) -> None:
    twin, a, b, policy = pair
    a.start(policy)
    wait_for("steward-0 leads", a.leading, 60)
    b.start(policy)
    wait_for("steward-1 stands by", lambda: (b.health() or {}).get("ready"), 60)
    wait_for("steward-0 acts", lambda: len(a.executed()) >= 2, 60, every=0.5)

    leases = client.CoordinationV1Api(admin_api(twin, tmp_path))
    assert a.leading() and not b.leading()
    twin.cut(a.token)
    cut = time.monotonic()
    time.sleep(0.3)  # a renewal the API server had begun to handle is in the Lease by now
    held = leases.read_namespaced_lease("steward-leader", "steward").spec
    # steward-0's last renewal, the last the API server took from it: the Lease expires after.
    assert held is not None and held.holder_identity == "steward-0" and held.renew_time
    expiry = held.renew_time + timedelta(seconds=LEASE_S)
    fenced = wait_for("steward-0 stops leading", lambda: not a.leading(), RENEW_S + 3, 0.05)
    led = wait_for("steward-1 leads", b.leading, LEASE_S + RENEW_S + 5, every=0.05)
    lease = leases.read_namespaced_lease("steward-leader", "steward")
    assert lease.spec is not None and lease.spec.holder_identity == "steward-1"
    before = len(b.executed())
    wait_for("steward-1 acts", lambda: len(b.executed()) > before, 60, every=0.5)
    twin.heal(a.token)
    time.sleep(3 * LEASE_S)  # the old leader hears again who leads: it stays a standby
    assert not a.leading() and (a.health() or {})["leader"]["holder"] == "steward-1"
    a.stop()
    b.stop()

    old, new = a.executed(), b.executed()
    assert old and new
    # steward-0's last action ran before its last renewal's lease could expire ...
    last_act = max(t for t, *_ in old)
    assert last_act < expiry, (last_act, expiry)
    # ... and steward-1 acted only after it (no overlap), and nothing ran twice.
    assert min(t for t, *_ in new) >= expiry
    ran = [(d, i) for _, d, i, _ in old + new]
    assert len(ran) == len(set(ran))
    print(
        f"fenced {fenced - cut:.2f} s after the cut (renew deadline {RENEW_S:g} s); standby led "
        f"{led - cut:.2f} s after it; last act {(expiry - last_act).total_seconds():.2f} s "
        "before the lease could expire"
    )
