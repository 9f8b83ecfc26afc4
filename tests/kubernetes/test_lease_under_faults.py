"""Steady leadership under API faults: with 40 % of the Lease API's requests failing (5xx, 409,
429, timeouts), the leader retries a failed renewal within its renew deadline instead of
letting the lead lapse at the first failure, so who leads changes at most once a minute.

Timings are the defaults scaled down 10x (retry 2 s -> 0.2 s, renew deadline 10 s -> 1 s,
request timeout 2 s -> 0.2 s; the lease, 15 s -> 1.5 s, is written in whole seconds: 2 s): 12 s
here stand for two minutes. A change is a new replica leading; a lapse that the same replica
ends by renewing is none (nobody acts meanwhile: the fence).
"""

from __future__ import annotations

import itertools
import threading
import time

import pytest
from kubernetes import client

from agent.support.leadership import LeaseLeadership
from lab.twin.faults import FaultSettings
from lab.twin.server import Twin
from tests.kubernetes.conftest import open_backend
from tools.backends.kubernetes.lease import LeaseHolder, LeaseSettings
from tools.backends.kubernetes.settings import KubernetesSettings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
SCALE = 10.0
MINUTES = 2.0


def test_the_lead_changes_at_most_once_a_minute_at_40_percent_faults(twin: Twin) -> None:
    backend = open_backend(twin)
    api = client.CoordinationV1Api(backend.api)
    replicas = []
    for name in ("steward-0", "steward-1"):
        settings = LeaseSettings(
            identity=name, duration_s=2.0, renew_deadline_s=1.0, retry_s=0.2, timeout_s=0.2
        )
        replicas.append(LeaseLeadership(LeaseHolder(api, settings), name, settings.retry_s))
    twin.configure_faults(
        FaultSettings(rate=0.4, timeout_s=0.3, seed=11, methods=("GET", "POST", "PUT"))
    )
    changes: list[tuple[float, str | None]] = []
    stop = threading.Event()

    def watch() -> None:
        last: str | None = "?"
        while not stop.wait(0.01):
            now = next((r.identity for r in replicas if r.leading()), None)
            if now != last:
                changes.append((time.monotonic(), now))
                last = now

    watcher = threading.Thread(target=watch, daemon=True)
    try:
        for r in replicas:
            r.start()
        watcher.start()
        time.sleep(MINUTES * 60 / SCALE)
    finally:
        stop.set()
        watcher.join()
        for r in replicas:
            r.stop()
        twin.configure_faults(FaultSettings())
        backend.close()

    assert sum(twin.faults.injected.values()) >= 20  # the faults were there
    assert sum(r.holder.renewal_retries for r in replicas) >= 1  # type: ignore[attr-defined]
    leaders = [who for _, who in changes if who is not None]
    moved = [b for a, b in itertools.pairwise(leaders) if a != b]
    assert len(moved) <= MINUTES, f"the lead moved {len(moved)} times: {changes}"
    assert all(r.leading() is False for r in replicas)  # both released at the stop


def test_a_lapse_that_a_renewal_ends_keeps_the_lead_where_it_was(twin: Twin) -> None:
    """Every write to the Lease fails for longer than the renew deadline: the leader stops
    acting (the fence), keeps trying, and once a write comes through — before the Lease's
    duration is up — it leads again; the Lease never changed hands and the standby never led."""
    backend = open_backend(twin)
    api = client.CoordinationV1Api(backend.api)
    replicas = []
    for name in ("steward-0", "steward-1"):
        settings = LeaseSettings(
            identity=name, duration_s=3.0, renew_deadline_s=1.0, retry_s=0.2, timeout_s=0.25
        )
        replicas.append(LeaseLeadership(LeaseHolder(api, settings), name, settings.retry_s))
    leader, standby = replicas
    try:
        leader.start()
        time.sleep(0.3)
        standby.start()
        time.sleep(0.5)
        assert leader.leading() and not standby.leading()
        twin.configure_faults(FaultSettings(rate=1.0, kinds=("5xx",), methods=("PUT",)))
        time.sleep(1.5)  # past the renew deadline, within the Lease's duration
        lapsed = leader.leading()
        twin.configure_faults(FaultSettings())
        time.sleep(0.6)
        assert not lapsed  # fenced while it could not renew ...
        assert leader.leading() and not standby.leading()  # ... and leading again after
        assert leader.holder.holder == standby.holder.holder == "steward-0"  # type: ignore[attr-defined]
        assert leader.holder.transitions == 0  # type: ignore[attr-defined]
        assert leader.holder.renewal_retries >= 5  # type: ignore[attr-defined]
    finally:
        for r in replicas:
            r.stop()
        twin.configure_faults(FaultSettings())
        backend.close()


def test_one_lease_request_takes_at_most_a_quarter_of_the_renew_deadline() -> None:
    """A request that hangs is given up early enough for more to be tried before the deadline
    (the defaults: a 10 s request timeout, a 10 s renew deadline -> 2.5 s per Lease request)."""
    settings = KubernetesSettings()
    assert LeaseSettings.of(settings, env={}).timeout_s == 2.5
    quick = KubernetesSettings.model_validate({"request_timeout_s": 1.0})
    assert LeaseSettings.of(quick, env={}).timeout_s == 1.0
