"""Helpers for the trace benchmark's tests: small CSV traces and short replays."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from lab.bench.trace.load import resolve
from lab.bench.trace.replay import Outcome, Prepared, Setup, prepare, replay
from lab.bench.trace.tuning import entries

T0 = datetime(2023, 11, 16, 18, 0, 0)


def request_csv(path: Path, rows: list[tuple[float, int, int]]) -> Path:
    """An Azure-format trace: (seconds since the first, context tokens, generated tokens)."""
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    lines += [f"{T0 + timedelta(seconds=s):%Y-%m-%d %H:%M:%S.%f},{i},{o}" for s, i, o in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def job_csv(path: Path, rows: list[tuple[float, float]]) -> Path:
    lines = ["TIMESTAMP,GpuSeconds"]
    lines += [f"{T0 + timedelta(seconds=s):%Y-%m-%d %H:%M:%S.%f},{g}" for s, g in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def prepared(
    trace: str, duration_s: float, *, rate_scale: float | None = None, seed: int = 0,
    fleet: tuple[int, int] | None = None, slo_s: float = 3.0, perturb: bool = True,
) -> Prepared:  # fmt: skip
    shape = resolve(trace, duration_s, seed)
    return prepare(Setup(shape, fleet, slo_s, duration_s, rate_scale, seed, perturb=perturb))


def run(prep: Prepared, name: str, knob: str | None = None) -> Outcome:
    """One run of a family: the grid value `knob` (e.g. "threshold=1"), else the first."""
    choices = entries(prep, name)
    entry = next(e for e in choices if knob is None or e.knob == knob)
    return replay(prep, entry)
