"""`steward bench audit`: what an append with fsync and a verification of a large log cost.

Both run in a fresh directory, signed with a bench key, so the figures include the HMAC; a bare
fdatasync of what one append writes is timed beside them as the disk's floor.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime, timedelta
from itertools import count, islice
from pathlib import Path
from typing import Annotated

import typer

from agent.audit import ActionOutcome, AuditLog, Check, Intent, Outcome, Proposal
from agent.cli.common import EXIT_CHECK_FAILED, DataDirOpt, JsonOpt, data_dir, emit_json, fail
from lab.cli import bench
from tools.actions import RotateMode, ScaleWorkload


def _bench_intent(n: int) -> Intent:
    """A realistic intent: two proposals with verdicts, a dozen signals."""
    return Intent(
        decision_id=f"d-bench-{n}",
        observed_at=datetime(2026, 11, 30, 9, 0, tzinfo=UTC) + timedelta(seconds=n),
        observation_digest=f"{n:064x}",
        signals={f"signal_{i}": i * 1.5 for i in range(12)},
        planner="llm",
        model="qwen3-32b",
        rationale="queue wait above the SLO for three ticks; render idle for 40 minutes",
        proposals=(
            Proposal(
                action=ScaleWorkload(workload="burst-llm", replicas=2, reason="queue above SLO"),
                verdict="allow",
                rule_ids=("pools.burst.max_cards", "budget.actions_per_hour"),
            ),
            Proposal(
                action=RotateMode(target_mode="cluster", reason="long-context requests"),
                verdict="needs_approval",
                rule_ids=("approval.rotate_mode.working_hours",),
                message="mode rotation during working hours needs a human",
            ),
        ),
    )


def _bench_outcome(n: int) -> Outcome:
    return Outcome(
        decision_id=f"d-bench-{n}",
        results=(
            ActionOutcome(index=0, executed=True, ok=True, changed=True, message="scaled to 2"),
            ActionOutcome.skipped(1, "waiting for approval"),
        ),
        verification=(Check(name="burst-llm ready replicas", ok=True, detail="2/2"),),
    )


def _fsync_floor(directory: Path, runs: int) -> bench.Figures:
    """What the disk alone costs: a bare fdatasync of the ~24 KiB one append writes to the WAL.

    An append is exactly one fdatasync plus a fraction of a millisecond of CPU, so this is the
    figure to read the append's against on a busy or slow disk.
    """
    fd = os.open(directory / "fsync-floor", os.O_RDWR | os.O_CREAT, 0o600)
    page = bytes(24 * 1024)

    def once() -> None:
        os.pwrite(fd, page, 0)
        os.fdatasync(fd)

    try:
        return bench.measure("bare fdatasync (24 KiB)", once, runs)
    finally:
        os.close(fd)


@bench.app.command("audit")
def bench_audit(
    runs: Annotated[int, typer.Option(min=10, help="Timed appends.")] = 500,
    records: Annotated[int, typer.Option(min=1, help="Records in the verified log.")] = 100_000,
    data: DataDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Append with fsync (target p99 <= 10 ms) and verify a large log (target 100,000 in <= 5 s).

    Runs in a fresh directory under --data-dir (default: a temporary one), signed with a bench
    key, so both figures include the HMAC.
    """
    parent = data_dir(data) if data else None
    with tempfile.TemporaryDirectory(prefix="steward-bench-audit-", dir=parent) as tmp:
        key = b"steward-bench-key"
        floor = _fsync_floor(Path(tmp), runs)
        with AuditLog.open(Path(tmp) / "append", key=key) as log:
            counter = iter(range(1, 10**9))
            append = bench.measure(
                "audit append (fsync)", lambda: log.write_intent(_bench_intent(next(counter))), runs
            )
        with AuditLog.open(Path(tmp) / "verify", key=key) as log:
            payloads = (p for n in count(1) for p in (_bench_intent(n), _bench_outcome(n)))
            written = 0
            while written < records:
                written += len(
                    log.append_batch(list(islice(payloads, min(1000, records - written))))
                )
            checked = bench.measure(f"audit verify {records}", log.verify, runs=3, warmup=1)
            report = log.verify()
    if not report.ok:
        fail(
            f"the freshly written bench log does not verify: {report.summary()}", EXIT_CHECK_FAILED
        )
    verify_s = round(checked.median_ms / 1000, 3)
    met = append.p99_ms <= 10 and verify_s <= 5 * records / 100_000
    result = {
        "name": "audit",
        "median_ms": append.median_ms,
        "p99_ms": append.p99_ms,
        "append": append.model_dump(),
        "fsync_floor": floor.model_dump(),
        "verify": checked.model_dump(),
        "verify_records": records,
        "verify_s": verify_s,
        "targets": {"append_p99_ms": 10, "verify_100k_s": 5},
        "met": met,
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    if json_out:
        emit_json(result)
    else:
        typer.echo(
            f"append with fsync: median {append.median_ms} ms, p99 {append.p99_ms} ms "
            f"({runs} runs, target p99 <= 10 ms)\n"
            f"this disk's floor, a bare fdatasync of what one append writes: median "
            f"{floor.median_ms} ms, p99 {floor.p99_ms} ms\n"
            f"verify {records} records: median {verify_s} s (3 runs, target <= 5 s per 100,000)\n"
            f"{'targets met' if met else 'TARGETS MISSED'} "
            f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPU(s))"
        )
    if not met:
        raise typer.Exit(EXIT_CHECK_FAILED)
