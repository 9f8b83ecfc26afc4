"""What a trace replay sends: the shipped traces, any Azure-format CSV, render job CSVs, a sinusoid.

A `Load` is one demand shape, resolved from `--trace NAME|FILE`:
- `azure-conv`, `azure-code`: the shipped Azure LLM traces (lab/traces), or any CSV with
  `TIMESTAMP,ContextTokens,GeneratedTokens` (long-prompt traces too: a request no model can hold
  is rejected by the serving model, as vLLM rejects it);
- `servegen[:SERVICE[:DAY]]`: one day (0-13) of one ServeGen service (m-large, m-mid, m-small,
  mm-image, deepseek-r1; default m-mid, day 0) compressed into the run (each 10-minute window
  lasts duration/144): the swings of a day inside an hour;
- `sinusoid`: 1 <-> 24 req/s with a 900 s period (the load of Dynamo issue #10528), requests of
  1,024 input and 256 output tokens on average;
- `random-sinusoid`: up to 24 req/s, its period (5-30 min), phase and trough (5-60 % of the
  peak) drawn from the seed;
- `flash`: a flash crowd: a steady load that grows tenfold within 30 s at a moment drawn from the
  seed, holds five minutes and decays over two;
- any CSV with `TIMESTAMP,GpuSeconds`: render jobs for the homelab's render pool.

`rate_scale` thins or replicates the arrivals (the sim's `rate_scale`). Left out, it is chosen so
that the busiest minute needs 80 % of what the driven pool can serve at most — fixed before any
controller runs, the same for all. Every load also gives its expected demand per 10 s bucket
(`Timeline`): the bound plans from it and the plots draw it.
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from lab.sim.demand import DemandSpec, RatesDemand, TraceDemand, load_trace
from tools.errors import InvalidInput

TRACES = Path(__file__).resolve().parents[2] / "traces"
SHIPPED = {
    "azure-conv": TRACES / "azure-2023-conv.csv",
    "azure-code": TRACES / "azure-2023-code.csv",
}
NAMES = ("azure-conv", "azure-code", "servegen", "sinusoid", "random-sinusoid", "flash")
SERVEGEN_SERVICES = ("m-large", "m-mid", "m-small", "mm-image", "deepseek-r1")
SERVEGEN_DAYS = 14
FLASH_FACTOR, FLASH_RISE_S, FLASH_HOLD_S, FLASH_DECAY_S = 10.0, 30.0, 300.0, 120.0
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

    def rotated(self, offset_s: float) -> Timeline:
        """This timeline started `offset_s` in, the skipped part appended (a trace in a loop)."""
        k = round(offset_s / self.bucket_s) % max(1, len(self.requests))

        def turn(xs: tuple[float, ...]) -> tuple[float, ...]:
            return xs[k:] + xs[:k]

        return Timeline(
            self.bucket_s,
            turn(self.requests),
            turn(self.input_tokens),
            turn(self.output_tokens),
            turn(self.work_s),
        )

    @property
    def span_s(self) -> float:
        return len(self.requests) * self.bucket_s

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


def resolve(trace: str, duration_s: float, seed: int = 0) -> Shape:
    """The load `--trace` names: a shipped name or a CSV file (`seed` draws the random loads;
    `duration_s` is the scored window, which synthetic loads and ServeGen's day are fitted to)."""
    if trace in SHIPPED:
        return _azure(trace, SHIPPED[trace])
    if trace == "sinusoid":
        return _sinusoid(duration_s)
    if trace == "random-sinusoid":
        return _random_sinusoid(duration_s, seed)
    if trace == "flash":
        return _flash(duration_s, seed)
    if trace == "servegen" or trace.startswith("servegen:"):
        return _servegen(trace, duration_s)
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


def training_split(trace: str, span_s: float) -> tuple[str, float]:
    """Where a load's training split is: (the load to tune on, the offset into it).

    A ServeGen day trains on the next day of the same service; a synthetic load on its own name
    (other seeds draw other arrivals, and other shapes for the random ones); a recorded trace on
    its second half onwards (it wraps), since the shipped Azure traces hold one hour each."""
    if trace == "servegen" or trace.startswith("servegen:"):
        service, day = servegen_choice(trace)
        return f"servegen:{service}:{(day + 1) % SERVEGEN_DAYS}", 0.0
    if trace in ("sinusoid", "random-sinusoid", "flash"):
        return trace, 0.0
    return trace, span_s / 2


def servegen_choice(trace: str) -> tuple[str, int]:
    """(service, day) of `servegen[:SERVICE[:DAY]]`."""
    parts = trace.split(":")
    service = parts[1] if len(parts) > 1 and parts[1] else SERVEGEN_COLUMN
    try:
        day = int(parts[2]) if len(parts) > 2 else 0
    except ValueError:
        day = -1
    if len(parts) > 3 or service not in SERVEGEN_SERVICES or not 0 <= day < SERVEGEN_DAYS:
        raise InvalidInput(
            f"--trace {trace!r}: servegen[:SERVICE[:DAY]] with SERVICE one of "
            f"{', '.join(SERVEGEN_SERVICES)} and DAY 0-{SERVEGEN_DAYS - 1}"
        )
    return service, day


def _servegen(trace: str, duration_s: float) -> Shape:
    service, day_index = servegen_choice(trace)
    path = TRACES / "servegen-rates-10min.csv"
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    day = [float(r[service] or 0.0) for r in rows[144 * day_index : 144 * (day_index + 1)]]
    window_s = max(BUCKET_S, round(duration_s / len(day) / BUCKET_S) * BUCKET_S)
    name = "servegen" if trace == "servegen" else f"servegen-{service}-d{day_index}"
    return _rate_shape(name, day, window_s, SERVEGEN_INPUT, SERVEGEN_OUTPUT)


def _random_sinusoid(duration_s: float, seed: int) -> Shape:
    rng = random.Random(f"random-sinusoid:{seed}")
    period = rng.uniform(300.0, 1800.0)
    phase = rng.uniform(0.0, 2 * math.pi)
    low = SINE_HIGH * rng.uniform(0.05, 0.6)
    mid, amp = (SINE_HIGH + low) / 2, (SINE_HIGH - low) / 2
    per_min = [
        60.0 * (mid - amp * math.cos(2 * math.pi * (i + 0.5) * BUCKET_S / period + phase))
        for i in range(math.ceil(duration_s / BUCKET_S))
    ]
    return _rate_shape("random-sinusoid", per_min, BUCKET_S, SINE_INPUT, SINE_OUTPUT)


def _flash(duration_s: float, seed: int) -> Shape:
    rng = random.Random(f"flash:{seed}")
    base = SINE_HIGH / FLASH_FACTOR
    at = rng.uniform(0.25, 0.6) * duration_s
    per_min = []
    for i in range(math.ceil(duration_s / BUCKET_S)):
        t = (i + 0.5) * BUCKET_S - at
        if t < 0:
            k = 1.0
        elif t < FLASH_RISE_S:
            k = 1 + (FLASH_FACTOR - 1) * t / FLASH_RISE_S
        elif t < FLASH_RISE_S + FLASH_HOLD_S:
            k = FLASH_FACTOR
        else:
            fall = (t - FLASH_RISE_S - FLASH_HOLD_S) / FLASH_DECAY_S
            k = max(1.0, FLASH_FACTOR - (FLASH_FACTOR - 1) * fall)
        per_min.append(60.0 * base * k)
    return _rate_shape("flash", per_min, BUCKET_S, SINE_INPUT, SINE_OUTPUT)


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
    shape: Shape,
    target: str,
    rate_scale: float,
    rates_dir: Path,
    *,
    per_request: bool,
    offset_s: float = 0.0,
) -> tuple[DemandSpec, ...]:
    """The sim's demand for `shape` at `target`: the trace row by row when `per_request` (the
    homelab), else Poisson arrivals at its per-window rates (fleet scale: cohorts). Both start
    `offset_s` in and loop: arrivals go on past the scored window."""
    if shape.kind == "jobs":
        return ()  # job traces are replayed by lab.bench.trace.record.JobTrace
    if per_request and shape.trace is not None:
        if rate_scale > 1000:
            raise InvalidInput(f"--rate-scale {rate_scale:g}: at most 1000 for a request trace")
        # Longer runs than the trace replay it again (the timeline repeats it the same way).
        return (
            TraceDemand(
                target=target, path=shape.trace, rate_scale=rate_scale, loop=True, offset_s=offset_s
            ),
        )
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
            loop=True,
            offset_s=offset_s % (len(shape.rates) * shape.rates_window_s),
            input_tokens=shape.mean_input,
            output_tokens=shape.mean_output,
        ),
    )
