"""What a trace replay sends: the shipped traces, any Azure-format CSV, render job CSVs, a sinusoid.

A `Load` is one demand shape, resolved from `--trace NAME|FILE`:
- `azure-conv`, `azure-code`: the shipped Azure LLM traces (evals/traces), or any CSV with
  `TIMESTAMP,ContextTokens,GeneratedTokens` (long-prompt traces too: a request no model can hold
  is rejected by the serving model, as vLLM rejects it);
- `servegen`: ServeGen's m-mid service, its first day compressed into the run (each 10-minute
  window lasts duration/144): the swings of a day inside an hour;
- `sinusoid`: 1 <-> 24 req/s with a 900 s period (the load of Dynamo issue #10528), requests of
  1,024 input and 256 output tokens on average;
- any CSV with `TIMESTAMP,GpuSeconds`: render jobs for the homelab's render pool.

`rate_scale` thins or replicates the arrivals (the sim's `rate_scale`). Left out, it is chosen so
that the busiest minute needs 80 % of what the driven pool can serve at most — fixed before any
controller runs, the same for all. Every load also gives its expected demand per 10 s bucket
(`Timeline`): the oracle plans from it and the plots draw it.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from tools.errors import InvalidInput
from tools.sim.demand import DemandSpec, RatesDemand, TraceDemand, load_trace

TRACES = Path(__file__).resolve().parents[2] / "traces"
SHIPPED = {
    "azure-conv": TRACES / "azure-2023-conv.csv",
    "azure-code": TRACES / "azure-2023-code.csv",
}
NAMES = ("azure-conv", "azure-code", "servegen", "sinusoid")
BUCKET_S = 10.0
PEAK_LOAD = 0.8
"""The busiest minute asks for this share of the driven pool's most capacity (auto rate scale)."""
SINE_LOW, SINE_HIGH, SINE_PERIOD_S = 1.0, 24.0, 900.0
SINE_INPUT, SINE_OUTPUT = 1024, 256
SERVEGEN_COLUMN = "m-mid"
SERVEGEN_INPUT, SERVEGEN_OUTPUT = 1200, 300


@dataclass(frozen=True, slots=True)
class Timeline:
    """Expected arrivals per bucket: requests, input and output tokens, job seconds."""

    bucket_s: float
    requests: tuple[float, ...]
    input_tokens: tuple[float, ...]
    output_tokens: tuple[float, ...]
    work_s: tuple[float, ...]

    def spanning(self, duration_s: float) -> Timeline:
        """This timeline cut to `duration_s`, or repeated up to it (a trace replayed in a loop)."""
        n = max(1, math.ceil(duration_s / self.bucket_s))
        size = len(self.requests)

        def cut(xs: tuple[float, ...]) -> tuple[float, ...]:
            return tuple(xs[i % size] for i in range(n))

        return Timeline(
            self.bucket_s,
            cut(self.requests),
            cut(self.input_tokens),
            cut(self.output_tokens),
            cut(self.work_s),
        )

    def scaled(self, k: float) -> Timeline:
        return Timeline(
            self.bucket_s,
            tuple(x * k for x in self.requests),
            tuple(x * k for x in self.input_tokens),
            tuple(x * k for x in self.output_tokens),
            tuple(x * k for x in self.work_s),
        )


@dataclass(frozen=True, slots=True)
class Shape:
    """A load before it is scaled and pointed at a pool."""

    name: str
    kind: Literal["requests", "jobs"]
    timeline: Timeline
    """At rate scale 1."""
    trace: Path | None = None
    """An Azure-format CSV replayed request by request."""
    rates: tuple[float, ...] = ()
    """Requests per minute per `rates_window_s` (Poisson arrivals, cohorts at fleet scale)."""
    rates_window_s: float = 60.0
    mean_input: int = 1000
    mean_output: int = 250
    jobs: tuple[tuple[float, float], ...] = ()
    """(seconds since the first job, GPU seconds) of a job trace."""


def resolve(trace: str, duration_s: float) -> Shape:
    """The load `--trace` names: a shipped name or a CSV file."""
    if trace in SHIPPED:
        return _azure(trace, SHIPPED[trace])
    if trace == "sinusoid":
        return _sinusoid(duration_s)
    if trace == "servegen":
        return _servegen(duration_s)
    path = Path(trace).expanduser()
    if not path.is_file():
        raise InvalidInput(
            f"--trace {trace!r}: neither a shipped trace ({', '.join(NAMES)}) nor a file; "
            "give one of those names or the path of a CSV"
        )
    header = _header(path)
    if {"TIMESTAMP", "GpuSeconds"} <= set(header):
        return _jobs(path)
    if {"TIMESTAMP", "ContextTokens", "GeneratedTokens"} <= set(header):
        return _azure(path.stem, path)
    raise InvalidInput(
        f"{path}: columns {','.join(header)}; a request trace has TIMESTAMP,ContextTokens,"
        "GeneratedTokens and a render job trace TIMESTAMP,GpuSeconds"
    )


def _header(path: Path) -> list[str]:
    try:
        with path.open(newline="") as fh:
            return [h.strip() for h in next(csv.reader(fh), [])]
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the trace: {exc.strerror}") from exc


def _buckets(n: int) -> list[list[float]]:
    return [[0.0] * n for _ in range(4)]


def _azure(name: str, path: Path) -> Shape:
    rows = load_trace(path)
    if not rows:
        raise InvalidInput(f"{path}: the trace has no requests")
    n = int(rows[-1][0] // BUCKET_S) + 1
    req, inp, out, work = _buckets(n)
    for at, i, o in rows:
        b = int(at // BUCKET_S)
        req[b] += 1
        inp[b] += i
        out[b] += o
    timeline = Timeline(BUCKET_S, tuple(req), tuple(inp), tuple(out), tuple(work))
    total = len(rows)
    return Shape(
        name=name,
        kind="requests",
        timeline=timeline,
        trace=path,
        rates=_per_minute(timeline),
        mean_input=round(sum(inp) / total),
        mean_output=max(1, round(sum(out) / total)),
    )


def _per_minute(t: Timeline) -> tuple[float, ...]:
    """Requests per minute per 60 s window (the rate form of a trace, for the fleet)."""
    per = round(60.0 / t.bucket_s)
    return tuple(
        sum(t.requests[i : i + per]) * 60.0 / (t.bucket_s * per)
        for i in range(0, len(t.requests), per)
    )


def _rate_shape(name: str, per_min: list[float], window_s: float, inp: int, outp: int) -> Shape:
    per_bucket = max(1, round(window_s / BUCKET_S))
    req = [r / 60.0 * BUCKET_S for r in per_min for _ in range(per_bucket)]
    timeline = Timeline(
        BUCKET_S,
        tuple(req),
        tuple(x * inp for x in req),
        tuple(x * outp for x in req),
        tuple(0.0 for _ in req),
    )
    return Shape(
        name=name,
        kind="requests",
        timeline=timeline,
        rates=tuple(per_min),
        rates_window_s=per_bucket * BUCKET_S,
        mean_input=inp,
        mean_output=outp,
    )


def _sinusoid(duration_s: float) -> Shape:
    windows = math.ceil(duration_s / BUCKET_S)
    mid, amp = (SINE_HIGH + SINE_LOW) / 2, (SINE_HIGH - SINE_LOW) / 2
    per_min = [
        60.0 * (mid - amp * math.cos(2 * math.pi * (i + 0.5) * BUCKET_S / SINE_PERIOD_S))
        for i in range(windows)
    ]
    return _rate_shape("sinusoid", per_min, BUCKET_S, SINE_INPUT, SINE_OUTPUT)


def _servegen(duration_s: float) -> Shape:
    path = TRACES / "servegen-rates-10min.csv"
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    day = [float(r[SERVEGEN_COLUMN] or 0.0) for r in rows[:144]]
    window_s = max(BUCKET_S, round(duration_s / len(day) / BUCKET_S) * BUCKET_S)
    return _rate_shape("servegen", day, window_s, SERVEGEN_INPUT, SERVEGEN_OUTPUT)


def _jobs(path: Path) -> Shape:
    try:
        with path.open(newline="") as fh:
            raw = [
                (datetime.fromisoformat(r["TIMESTAMP"].strip()[:26]), float(r["GpuSeconds"]))
                for r in csv.DictReader(fh)
            ]
    except (KeyError, ValueError) as exc:
        raise InvalidInput(f"{path}: a job row is not TIMESTAMP,GpuSeconds ({exc})") from exc
    if not raw:
        raise InvalidInput(f"{path}: the job trace has no jobs")
    if any(s <= 0 for _, s in raw):
        raise InvalidInput(f"{path}: GpuSeconds must be > 0 on every row")
    first = raw[0][0]
    jobs = tuple(sorted(((ts - first).total_seconds(), s) for ts, s in raw))
    n = int(jobs[-1][0] // BUCKET_S) + 1
    req, inp, out, work = _buckets(n)
    for at, s in jobs:
        req[int(at // BUCKET_S)] += 1
        work[int(at // BUCKET_S)] += s
    timeline = Timeline(BUCKET_S, tuple(req), tuple(inp), tuple(out), tuple(work))
    return Shape(name=path.stem, kind="jobs", timeline=timeline, jobs=jobs)


def demand_for(
    shape: Shape, target: str, rate_scale: float, rates_dir: Path, *, per_request: bool
) -> tuple[DemandSpec, ...]:
    """The sim's demand for `shape` at `target`: the trace row by row when `per_request` (the
    homelab), else Poisson arrivals at its per-window rates (fleet scale: cohorts)."""
    if shape.kind == "jobs":
        return ()  # job traces are replayed by evals.bench.trace.record.JobTrace
    if per_request and shape.trace is not None:
        if rate_scale > 1000:
            raise InvalidInput(f"--rate-scale {rate_scale:g}: at most 1000 for a request trace")
        # Longer runs than the trace replay it again (the timeline repeats it the same way).
        return (TraceDemand(target=target, path=shape.trace, rate_scale=rate_scale, loop=True),)
    path = rates_dir / f"{shape.name}-{target}.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["window_start_s", "rate"])
        for i, r in enumerate(shape.rates):
            w.writerow([i * shape.rates_window_s, r])
    return (
        RatesDemand(
            target=target,
            path=path,
            column="rate",
            rate_scale=min(1000.0, rate_scale),
            loop=False,
            input_tokens=shape.mean_input,
            output_tokens=shape.mean_output,
        ),
    )
