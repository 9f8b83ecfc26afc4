"""`steward audit verify|show|explain|export`: the decision log read back.

Every command opens DATA_DIR/audit.db read-only, so it runs safely beside the daemon that writes
it. STEWARD_AUDIT_KEY, when set, makes `verify` check every HMAC.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal, cast, get_args

import typer

from agent.audit import (
    KINDS,
    AuditError,
    AuditLog,
    Kind,
    LogLost,
    render,
    summary,
)
from agent.audit import explain as explain_decision
from agent.audit.errors import LogDamaged
from agent.audit.outside import parse as parse_outside
from agent.cli.common import (
    EXIT_CHECK_FAILED,
    DataDirOpt,
    JsonOpt,
    decision_id_arg,
    emit_json,
    fail,
    readable_data_dir,
)
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
