"""Record times never go backwards: the writer stamps a record no earlier than the one before
(whatever its clock says: a simulated cluster restored from an older save goes back), and
verify names a log whose times do go backwards."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from agent.audit import AuditLog, Startup
from agent.audit.chain import body_for, hash_body
from agent.audit.records import GENESIS_HASH
from agent.audit.verify import check
from tests.audit.builders import T0


class Clock:
    """A clock the test sets, backwards too."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _startup(n: int) -> Startup:
    return Startup(pid=n, host="gx10-a", version="0.1.0")


def test_the_writer_never_stamps_a_record_before_the_last(tmp_path: Path) -> None:
    clock = Clock()
    with AuditLog.open(tmp_path, clock=clock) as log:
        log.append(_startup(1))
        clock.now = T0 - timedelta(minutes=10)  # the cluster's clock went back
        log.append_batch([_startup(2), _startup(3)])
        clock.now = T0 + timedelta(minutes=1)
        log.append(_startup(4))
        times = [r.time for r in log.records()]
        report = log.verify()
    assert times == [T0, T0, T0, T0 + timedelta(minutes=1)]
    assert report.ok, report.summary()


def test_verify_names_a_time_that_goes_backwards() -> None:
    rows = []
    prev = GENESIS_HASH
    for seq, at in enumerate((T0, T0 + timedelta(seconds=5), T0), start=1):
        payload = _startup(seq)
        body = body_for(seq, at, payload, prev)
        digest = hash_body(body)
        stored_time = body.split('"time":"')[1].split('"')[0]
        rows.append((seq, stored_time, "startup", None, prev, body, digest, None))
        prev = digest
    report = check(rows, None, None)
    kinds = [p.problem for p in report.problems]
    assert "time_backwards" in kinds
    (backwards,) = [p for p in report.problems if p.problem == "time_backwards"]
    assert backwards.seq == 3


def test_the_startup_record_says_whose_time_the_records_carry(tmp_path: Path) -> None:
    from agent.audit.explanations import summary
    from lab.sim.scenario import Scenario
    from tests.loop.conftest import open_runtime

    runtime = open_runtime(tmp_path, Scenario(name="homelab"))
    runtime.close()
    log = AuditLog.open(tmp_path, readonly=True)
    try:
        (started,) = [r for r in log.records(kind="startup")]
    finally:
        log.close()
    assert isinstance(started.payload, Startup) and started.payload.clock == "simulated"
    assert "times on the simulated clock" in summary(started)
