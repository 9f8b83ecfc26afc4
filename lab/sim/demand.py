"""Demand: where the simulator's requests come from.

Six kinds of demand, each a pydantic spec (what a scenario file writes) and a generator that
yields the requests arriving in a time window, deterministically for a seed:

- `poisson`: a constant rate;
- `diurnal`: a rate that follows the day, lowest at `trough_hour`, highest twelve hours later;
- `burst`: a rate during one window only;
- `trace`: replay of a real request trace (the CSVs in lab/traces: TIMESTAMP, ContextTokens,
  GeneratedTokens), thinned or replicated by `rate_scale` (a real service's trace is many times
  what two GX10 serve; thinning keeps the trace's shape over time, unlike compressing it);
- `rates`: Poisson arrivals following a per-window rate file (ServeGen's rates per 10-minute
  window over two weeks), scaled by `rate_scale`: the shape of days when a trace is an hour;
- `render`: render jobs, not token requests: each needs `gpu_s_per_job` seconds of one render
  replica (its cards busy), arriving by `arrivals` (poisson, burst or diurnal, as above). A job
  is a `Request` with `work_s` set (its tokens are 0); lab.sim.jobs runs them.

A request targets a workload or a pool (then the router picks one of the pool's workloads).
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from lab.sim.limits import MAX_RATE_PER_MIN, MAX_SPAN_S
from tools.errors import InvalidInput


@dataclass(slots=True)
class Request:
    """One request: when it arrived (seconds since the scenario's start) and its size."""

    arrival_s: float
    input_tokens: int
    output_tokens: int
    target: str
    count: int = 1
    """Identical requests this stands for: 1, or a fleet-scale cohort (see `Generator`)."""
    work_s: float = 0.0
    """A render job: seconds of one replica it needs (0 for a token request)."""


class _Demand(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str = Field(min_length=1, description="A workload or pool name.")
    input_tokens: int = Field(
        default=1_000, ge=1, le=1 << 24, description="Mean input tokens per request."
    )
    output_tokens: int = Field(
        default=250, ge=1, le=1 << 24, description="Mean output tokens per request."
    )


class PoissonDemand(_Demand):
    kind: Literal["poisson"] = "poisson"
    rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)


class DiurnalDemand(_Demand):
    kind: Literal["diurnal"] = "diurnal"
    min_rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)
    max_rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)
    trough_hour: float = Field(default=4.0, ge=0, lt=24, description="Hour of the lowest rate.")


class BurstDemand(_Demand):
    kind: Literal["burst"] = "burst"
    rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)
    at_s: float = Field(ge=0, le=MAX_SPAN_S)
    duration_s: float = Field(gt=0, le=MAX_SPAN_S)


class TraceDemand(_Demand):
    kind: Literal["trace"] = "trace"
    path: Path
    rate_scale: float = Field(default=1.0, gt=0, le=1000)
    offset_s: float = Field(
        default=0.0, ge=0, le=MAX_SPAN_S, description="Start this far into the trace."
    )
    loop: bool = False


class RatesDemand(_Demand):
    """Poisson arrivals at the rate a rates CSV gives per window (ServeGen's days and weeks)."""

    kind: Literal["rates"] = "rates"
    path: Path
    column: str = Field(min_length=1, description="The service column, e.g. m-mid.")
    rate_scale: float = Field(default=1.0, gt=0, le=1000)
    offset_s: float = Field(
        default=0.0, ge=0, le=MAX_SPAN_S, description="Start this far into the file."
    )
    loop: bool = True


class _Arrivals(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PoissonArrivals(_Arrivals):
    kind: Literal["poisson"] = "poisson"
    rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)


class BurstArrivals(_Arrivals):
    kind: Literal["burst"] = "burst"
    rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)
    at_s: float = Field(ge=0, le=MAX_SPAN_S)
    duration_s: float = Field(gt=0, le=MAX_SPAN_S)


class DiurnalArrivals(_Arrivals):
    kind: Literal["diurnal"] = "diurnal"
    min_rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)
    max_rate_per_min: float = Field(ge=0, le=MAX_RATE_PER_MIN)
    trough_hour: float = Field(default=4.0, ge=0, lt=24, description="Hour of the lowest rate.")


Arrivals = Annotated[PoissonArrivals | BurstArrivals | DiurnalArrivals, Field(discriminator="kind")]


class RenderDemand(BaseModel):
    """Render jobs: each keeps one render replica busy for about `gpu_s_per_job` seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["render"] = "render"
    target: str = Field(min_length=1, description="A render workload (or its pool).")
    gpu_s_per_job: float = Field(
        gt=0, le=MAX_SPAN_S, description="Mean seconds of one replica per job."
    )
    arrivals: Arrivals


DemandSpec = Annotated[
    PoissonDemand | DiurnalDemand | BurstDemand | TraceDemand | RatesDemand | RenderDemand,
    Field(discriminator="kind"),
]

_Shape = (
    PoissonDemand
    | DiurnalDemand
    | BurstDemand
    | TraceDemand
    | RatesDemand
    | PoissonArrivals
    | BurstArrivals
    | DiurnalArrivals
)
"""What sets the arrival rate: the demand itself, or a render demand's `arrivals`."""

JOB_SHAPE = 4.0
"""Render job sizes are gamma-distributed with this shape (a coefficient of variation of 1/2:
frames of one project take similar times, unlike chat replies' long tails)."""


def _job_s(rng: random.Random, spec: RenderDemand) -> float:
    return rng.gammavariate(JOB_SHAPE, spec.gpu_s_per_job / JOB_SHAPE)


def _sizes(rng: random.Random, spec: _Demand) -> tuple[int, int]:
    """Request sizes: exponential around the means (long tails, as real chat traffic has)."""
    inp = max(1, round(rng.expovariate(1.0 / spec.input_tokens)))
    out = max(1, round(rng.expovariate(1.0 / spec.output_tokens)))
    return inp, out


COHORT_ABOVE = 16.0
"""Expected arrivals per window above which a generator emits one cohort per window."""
_QUANTILES = tuple(-math.log(1.0 - (i + 0.5) / 4) for i in range(4))
OUTPUT_SHARES = tuple(q / (sum(_QUANTILES) / len(_QUANTILES)) for q in _QUANTILES)
"""A cohort's answer lengths, as shares of the mean: the midpoints of the exponential's quarters
(the per-request draws' distribution), scaled so that their mean is the mean."""


class Generator:
    """Yields the requests of one demand spec, window after window, deterministically.

    When more than COHORT_ABOVE requests are expected in a window (a fleet's thousands per
    second), the window's arrivals come as one cohort: a Poisson-distributed count of requests of
    the mean sizes, arriving mid-window. Below it, every request is drawn on its own.

    The generator's whole state is (`next_s`, `cursor`, the RNG state): the store persists it.
    """

    def __init__(self, spec: DemandSpec, seed: int, start: datetime) -> None:
        self.spec = spec
        self.rng = random.Random(seed)
        self.start_hour = start.hour + start.minute / 60 + start.second / 3600
        self.next_s = 0.0
        """Poisson-type kinds: the next arrival's time, drawn ahead (thinning for diurnal)."""
        self.cursor = 0
        """Trace kind: rows already replayed (over all loops)."""
        self.primed = False
        self.shape: _Shape = spec.arrivals if isinstance(spec, RenderDemand) else spec

    def _rate_per_s(self, t: float) -> float:
        spec = self.shape
        if isinstance(spec, PoissonDemand | PoissonArrivals):
            return spec.rate_per_min / 60
        if isinstance(spec, DiurnalDemand | DiurnalArrivals):
            hour = (self.start_hour + t / 3600) % 24
            phase = 2 * math.pi * (hour - spec.trough_hour) / 24
            level = (1 - math.cos(phase)) / 2
            rate = spec.min_rate_per_min + (spec.max_rate_per_min - spec.min_rate_per_min) * level
            return rate / 60
        if isinstance(spec, BurstDemand | BurstArrivals):
            return spec.rate_per_min / 60 if spec.at_s <= t < spec.at_s + spec.duration_s else 0.0
        if isinstance(spec, RatesDemand):
            window_s, rates = load_rates(spec.path, spec.column)
            i = int((t + spec.offset_s) // window_s)
            if i >= len(rates) and not spec.loop:
                return 0.0
            return rates[i % len(rates)] * spec.rate_scale / 60
        return 0.0

    def _peak_rate_per_s(self) -> float:
        spec = self.shape
        if isinstance(spec, DiurnalDemand | DiurnalArrivals):
            return max(spec.min_rate_per_min, spec.max_rate_per_min) / 60
        if isinstance(spec, PoissonDemand | BurstDemand | PoissonArrivals | BurstArrivals):
            return spec.rate_per_min / 60
        if isinstance(spec, RatesDemand):
            return max(load_rates(spec.path, spec.column)[1]) * spec.rate_scale / 60
        return 0.0

    def window(self, t0: float, t1: float) -> list[Request]:
        """The requests arriving in [t0, t1)."""
        if isinstance(self.spec, TraceDemand):
            return self._trace_window(self.spec, t0, t1)
        peak = self._peak_rate_per_s()
        if peak <= 0:
            return []
        if peak * (t1 - t0) > COHORT_ABOVE:
            return self._cohort(t0, t1)
        if not self.primed:
            self.next_s = self._first_after(t0, peak)
            self.primed = True
        out: list[Request] = []
        while self.next_s < t1:
            t = self.next_s
            # Thinning (Lewis-Shedler): draw at the peak rate, keep with rate(t)/peak.
            if self.rng.random() * peak < self._rate_per_s(t):
                out.append(self._draw(t))
            self.next_s = t + self.rng.expovariate(peak)
        return out

    def _draw(self, t: float) -> Request:
        spec = self.spec
        if isinstance(spec, RenderDemand):
            return Request(t, 0, 0, spec.target, work_s=_job_s(self.rng, spec))
        assert not isinstance(spec, TraceDemand)  # traces replay rows, they draw nothing
        inp, outp = _sizes(self.rng, spec)
        return Request(t, inp, outp, spec.target)

    def _cohort(self, t0: float, t1: float) -> list[Request]:
        mid = (t0 + t1) / 2
        mean = self._rate_per_s(mid) * (t1 - t0)
        count = _poisson(self.rng, mean)
        self.primed = False  # per-request draws restart cleanly if the rate falls again
        if count == 0:
            return []
        spec = self.spec
        if isinstance(spec, RenderDemand):
            return [Request(mid, 0, 0, spec.target, count, work_s=spec.gpu_s_per_job)]
        assert not isinstance(spec, TraceDemand)
        # The cohort's answers are as long as the per-request draws' (exponential around the
        # mean), not all alike: alike requests admitted together would all finish in the same
        # step, and a least-loaded router would then refill that replica with one cohort's worth
        # of prompts at once, again and again (their first tokens seconds late).
        parts = [count // len(OUTPUT_SHARES) + (i < count % len(OUTPUT_SHARES))
                 for i in range(len(OUTPUT_SHARES))]  # fmt: skip
        return [
            Request(mid, spec.input_tokens, max(1, round(spec.output_tokens * f)), spec.target, k)
            for f, k in zip(OUTPUT_SHARES, parts, strict=True)
            if k
        ]

    def _first_after(self, t0: float, peak: float) -> float:
        shape = self.shape
        start = shape.at_s if isinstance(shape, BurstDemand | BurstArrivals) else 0.0
        return max(t0, start) + self.rng.expovariate(peak)

    def _trace_window(self, spec: TraceDemand, t0: float, t1: float) -> list[Request]:
        rows = load_trace(spec.path)
        span = rows[-1][0] + 1.0 if rows else 0.0
        out: list[Request] = []
        while rows:
            loop, i = divmod(self.cursor, len(rows))
            if loop and not spec.loop:
                break
            at, inp, outp = rows[i]
            t = at - spec.offset_s + loop * span
            if t >= t1:
                break
            self.cursor += 1
            if t < 0:
                continue  # before the offset
            copies = int(spec.rate_scale)
            if self.rng.random() < spec.rate_scale - copies:
                copies += 1
            out.extend(Request(max(t, t0), inp, outp, spec.target) for _ in range(copies))
        return out


def _poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw: Knuth's method for small means, the normal approximation above 50."""
    if mean <= 0:
        return 0
    if mean > 50:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


@cache
def load_rates(path: Path, column: str) -> tuple[float, tuple[float, ...]]:
    """(window length in seconds, requests per minute per window) of one column of a rates CSV
    (`window_start_s` then one column per service; an empty cell is no traffic)."""
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the rates file: {exc.strerror}") from exc
    if not rows or column not in rows[0] or "window_start_s" not in rows[0]:
        known = ", ".join(k for k in (rows[0] if rows else {}) if k != "window_start_s")
        raise InvalidInput(f"{path}: no column {column!r} next to window_start_s (has: {known})")
    try:
        starts = [float(r["window_start_s"]) for r in rows]
        rates = tuple(float(r[column]) if r[column] else 0.0 for r in rows)
    except ValueError as exc:
        raise InvalidInput(f"{path}: column {column!r}: not a number ({exc})") from exc
    window_s = starts[1] - starts[0] if len(starts) > 1 else 600.0
    return window_s, rates


@cache
def load_trace(path: Path) -> tuple[tuple[float, int, int], ...]:
    """Rows of a trace CSV as (seconds since the first request, input tokens, output tokens)."""
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            raw = [
                (
                    datetime.fromisoformat(r["TIMESTAMP"].strip()[:26]),
                    int(r["ContextTokens"]),
                    int(r["GeneratedTokens"]),
                )
                for r in reader
            ]
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the trace: {exc.strerror}") from exc
    except (KeyError, ValueError) as exc:
        raise InvalidInput(
            f"{path}: not a trace with columns TIMESTAMP,ContextTokens,GeneratedTokens ({exc})"
        ) from exc
    if not raw:
        return ()
    first = raw[0][0]
    return tuple(((ts - first).total_seconds(), max(1, inp), max(1, out)) for ts, inp, out in raw)
