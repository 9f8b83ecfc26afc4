"""`steward audit verify|show|explain|export` and `steward bench audit`: the decision log read back.

Every command opens DATA_DIR/audit.db read-only, so it runs safely beside the daemon that writes
it. STEWARD_AUDIT_KEY, when set, makes `verify` check every HMAC.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from itertools import count, islice
from pathlib import Path
from typing import Annotated, Literal, cast, get_args

import typer

from agent.audit import (
    KINDS,
    ActionOutcome,
    AuditError,
    AuditLog,
    Check,
    Intent,
    Kind,
    LogLost,
    Outcome,
    Proposal,
    render,
    summary,
)
from agent.audit import explain as explain_decision
from agent.audit.errors import LogDamaged
from agent.audit.outside import parse as parse_outside
from agent.cli import bench
from agent.cli.common import (
    EXIT_CHECK_FAILED,
    DataDirOpt,
    JsonOpt,
    data_dir,
    decision_id_arg,
    emit_json,
    fail,
    readable_data_dir,
)
from tools.actions import RotateMode, ScaleWorkload
from tools.errors import InvalidInput

app = typer.Typer(help="Read and check the decision log.", no_args_is_help=True)

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_since(text: str, now: datetime) -> datetime:
    """An ISO time (`2026-11-30T08:00`, naive means UTC) or an age (`90s`, `15m`, `2h`, `3d`)."""
    match = _RELATIVE.match(text.strip())
    if match:
        return now - timedelta(**{_UNITS[match[2]]: float(match[1])})
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        fail(f"--since {text!r}: give an ISO time (2026-11-30T08:00) or an age such as 15m, 2h, 3d")
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _open(data: Path | None) -> AuditLog:
    try:
        return AuditLog.open(readable_data_dir(data), readonly=True)
    except AuditError as exc:
        fail(str(exc))


@app.command()
def verify(
    data: DataDirOpt = None,
    json_out: JsonOpt = False,
    witness: Annotated[
        str | None,
        typer.Option(
            "--witness",
            help="A head kept outside the data dir: the witness file the daemon appends to "
            "(audit.witness), or SEQ:HASH from /metrics or a notice. Proves the log was not "
            "rolled back past it.",
        ),
    ] = None,
) -> None:
    """Check every record's hash, MAC, place and the anchor; exit 1 naming the first bad one."""
    try:
        outside = parse_outside(witness) if witness is not None else None
    except InvalidInput as exc:
        fail(str(exc))
    try:
        opened = AuditLog.open(readable_data_dir(data), readonly=True)
    except (LogLost, LogDamaged) as exc:  # a log lost or damaged where one was written
        typer.echo(str(exc), err=True)
        raise typer.Exit(EXIT_CHECK_FAILED) from None
    except AuditError as exc:
        fail(str(exc))
    with opened as log:
        report = log.verify(outside)
    if json_out:
        emit_json(report)
    elif report.ok:
        typer.echo(report.summary())
    else:
        typer.echo(f"{log.path}: {report.summary()}", err=True)
    if not report.ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


@app.command()
def show(
    *,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="ISO time, or an age (90s, 15m, 2h, 3d) counted back from the log's last "
            "record, in the log's own clock (simulated or wall).",
        ),
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help=f"Only this kind: {', '.join(KINDS)}.")
    ] = None,
    decision: Annotated[str | None, typer.Option("--decision", help="Only this decision.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="The last N only.")] = None,
    data: DataDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List records, oldest first: seq, time, kind, decision and what each says."""
    if kind is not None and kind not in get_args(Kind):
        fail(f"--kind {kind!r} is not a record kind; use one of {', '.join(KINDS)}")
    with _open(data) as log:
        start = parse_since(since, log.last_time() or datetime.now(UTC)) if since else None
        found = log.records(
            since=start, kind=cast(Kind | None, kind), decision_id=decision, limit=limit
        )
    if json_out:
        emit_json([r.model_dump(mode="json") for r in found])
        return
    for r in found:
        who = r.decision_id or "-"
        typer.echo(f"{r.seq:>6}  {r.time:%Y-%m-%d %H:%M:%S}  {r.kind:<11}  {who:<15}  {summary(r)}")
    if not found:
        typer.echo("no records match", err=True)


@app.command()
def explain(
    id_: Annotated[
        str,
        typer.Argument(
            metavar="ID", help="A decision id, or a record's seq.", callback=decision_id_arg
        ),
    ],
    data: DataDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Explain one decision: seen, proposed, which rules allowed or denied, approved, done."""
    with _open(data) as log:
        decision = id_
        if id_.isdigit():
            record = log.record(int(id_))
            if record is None:
                fail(f"no record seq {id_} in {log.path}; `steward audit show` lists them")
            if record.decision_id is None:
                if json_out:
                    emit_json(record)
                else:
                    typer.echo(f"seq {record.seq} ({record.kind}): {summary(record)}")
                return
            decision = record.decision_id
        records = log.decision(decision)
    try:
        explanation = explain_decision(records)
    except ValueError:
        fail(
            f"no decision {decision!r} with an intent or plan in {log.path}; "
            "`steward audit show --kind intent` lists them"
        )
    if json_out:
        emit_json(explanation)
    else:
        typer.echo(render(explanation))


@app.command()
def export(
    format_: Annotated[
        Literal["jsonl"], typer.Option("--format", help="jsonl: one JSON object per line.")
    ] = "jsonl",
    data: DataDirOpt = None,
) -> None:
    """Write every record as one JSON object per line, actions joined to verdicts and results."""
    out = sys.stdout
    with _open(data) as log:
        for row in log.export():
            out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
    out.flush()


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
