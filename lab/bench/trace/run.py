"""`steward bench trace` end to end: options in, training, test seeds, the bound, figures out.

1. The training split (`load.training_split`: another window or day, seed TRAIN_SEED) fixes the
   rate scale (calibrate.py) and each family's knob (tuning.tune).
2. Each test seed (`--seed`, `--seed`+1, ...) draws its arrivals, its hidden capacity factors and
   its load times; every controller runs at its tuned knob, and the bound (bound.py) is found and
   certified on the same seed.
3. The JSON is `{"controllers": {NAME: summary}, "bound": summary}`: means over the seeds with
   95 % bootstrap intervals (intervals.py), and each controller's GPU-hours over the bound's.
   The bound carries its certificate check: `beaten_by` lists every controller run that met the
   target on fewer GPU-hours than the bound of its seed (empty when the bound holds); the CLI
   also says so on stderr.
With `jobs` > 1 the training grid's replays, then each test seed's controllers and the bound's
searches, run in that many processes (parallel.py); the figures are those of `jobs` = 1.
"""

from __future__ import annotations

import math
import re
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from lab.bench.trace.bound import Beaten, Bound, beaten_by, bound
from lab.bench.trace.calibrate import calibrated
from lab.bench.trace.intervals import mean_ci
from lab.bench.trace.load import resolve, training_split
from lab.bench.trace.parallel import MAX_JOBS, run_all
from lab.bench.trace.replay import Outcome, Prepared, Setup, prepare, replay, with_scales
from lab.bench.trace.tuning import TARGET_ATTAINMENT, Tuned, parse_controllers, tune
from tools.errors import InvalidInput

FLEET = re.compile(r"fleet:(\d+)x(\d+)")
TRAIN_SEED = 1000
"""Training seeds start here; test seeds are the user's (0 up by default), never these."""
DEFAULT_CONTROLLERS = "steward,static,keda,hpa,dynamo,rayserve,aibrix"


@dataclass(frozen=True, slots=True)
class Result:
    train: Prepared
    tuned: dict[str, Tuned]
    tests: list[Prepared]
    runs: dict[str, list[Outcome]]
    """Per controller, one outcome per test seed (in the order of `tests`)."""
    bounds: list[Bound]

    def figures(self) -> dict[str, object]:
        bound_gpu = [b.outcome.figures.gpu_hours for b in self.bounds]
        return {
            "controllers": {
                n: summary(outs, bound_gpu, self.tuned[n].entry.knob)
                for n, outs in self.runs.items()
            },
            "bound": {
                **summary([b.outcome for b in self.bounds], bound_gpu, "dynamic programming"),
                "certified": all(b.certified for b in self.bounds),
                "utilization": [round(b.utilization, 4) for b in self.bounds],
                "smoothing_s": [
                    None if math.isinf(b.smoothing_s) else b.smoothing_s for b in self.bounds
                ],
                "beaten_by": [
                    {
                        "controller": x.controller,
                        "seed": x.seed,
                        "gpu_hours": x.gpu_hours,
                        "bound_gpu_hours": x.bound_gpu_hours,
                    }
                    for x in self.beaten()
                ],
            },
            "setup": self.setup(),
        }

    def beaten(self) -> list[Beaten]:
        """Controller runs that met the target on fewer GPU-hours than their seed's bound."""
        seeds = [p.setup.seed for p in self.tests]
        return beaten_by(self.bounds, self.runs, seeds, TARGET_ATTAINMENT)

    def setup(self) -> dict[str, object]:
        s = self.tests[0].setup
        t = self.train.setup
        return {
            "trace": s.shape.name,
            "profile": "homelab" if s.fleet is None else f"fleet:{s.fleet[0]}x{s.fleet[1]}",
            "duration_h": s.duration_s / 3600,
            "slo_ttft_s": s.slo_ttft_s,
            "slo_itl_s": s.slo_itl_s,
            "test_seeds": [p.setup.seed for p in self.tests],
            "train": {"trace": t.shape.name, "offset_s": t.offset_s, "seed": t.seed},
            "rate_scale": self.train.rate_scale,
            "commit": commit(),
        }


def commit() -> str:
    """The checkout's commit (with +dirty when tracked files changed), or "unknown"."""
    root = Path(__file__).resolve().parents[3]

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def summary(outs: list[Outcome], bound_gpu: list[float], knob: str) -> dict[str, object]:
    """Means over seeds with 95 % intervals; ratio_to_bound per seed, then its mean."""
    f = [o.figures for o in outs]

    def ci(values: list[float], digits: int = 4) -> tuple[float, list[float]]:
        m, lo, hi = mean_ci(values)
        return round(m, digits), [round(lo, digits), round(hi, digits)]

    slo, slo_ci = ci([x.slo_attainment for x in f], 5)
    gpu, gpu_ci = ci([x.gpu_hours for x in f])
    ratios = [x.gpu_hours / b for x, b in zip(f, bound_gpu, strict=True) if b > 0]
    ratio, ratio_ci = ci(ratios) if ratios else (None, None)
    return {
        "knob": knob,
        "slo_attainment": slo,
        "slo_attainment_ci": slo_ci,
        "ttft_attainment": round(statistics.fmean(x.ttft_attainment for x in f), 5),
        "itl_attainment": round(statistics.fmean(x.itl_attainment for x in f), 5),
        "gpu_hours": gpu,
        "gpu_hours_ci": gpu_ci,
        "ratio_to_bound": ratio,
        "ratio_to_bound_ci": ratio_ci,
        "reversals": round(statistics.fmean(x.reversals for x in f), 2),
        "scaling_actions": round(statistics.fmean(x.scaling_actions for x in f), 2),
        "energy_kwh": round(statistics.fmean(x.energy_kwh for x in f), 4),
        "ttft_p99_s": _mean_of(x.ttft_p99_s for x in f),
        "itl_p99_s": _mean_of(x.itl_p99_s for x in f),
        "meets_target_seeds": sum(1 for x in f if x.slo_attainment >= TARGET_ATTAINMENT),
        "median_ms": round(statistics.fmean(x.median_ms for x in f), 3),
        "p99_ms": round(max(x.p99_ms for x in f), 3),
        "seeds": len(f),
        "per_seed": [{"slo_attainment": x.slo_attainment, "gpu_hours": x.gpu_hours} for x in f],
    }


def _mean_of(values: object) -> float | None:
    xs = [v for v in values if v is not None]  # type: ignore[attr-defined]
    return round(statistics.fmean(xs), 4) if xs else None


def parse_profile(text: str) -> tuple[int, int] | None:
    if text == "homelab":
        return None
    found = FLEET.fullmatch(text)
    if found is None:
        raise InvalidInput(f"--profile {text!r}: give homelab or fleet:NxM (e.g. fleet:64x8)")
    nodes, cards = int(found[1]), int(found[2])
    if not (1 <= nodes <= 20_000 and 1 <= cards <= 16):
        raise InvalidInput(f"--profile {text}: nodes 1..20000 and cards per node 1..16")
    return nodes, cards


def bench(
    trace: str,
    *,
    profile: str = "homelab",
    controllers: str = DEFAULT_CONTROLLERS,
    slo_ttft_s: float = 3.0,
    slo_itl_s: float = 0.1,
    duration_h: float = 1.0,
    rate_scale: float | None = None,
    seed: int = 0,
    seeds: int = 5,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
) -> Result:
    if slo_ttft_s <= 0 or slo_itl_s <= 0 or duration_h <= 0:
        raise InvalidInput("--slo-ttft, --slo-itl and --duration must be > 0")
    if rate_scale is not None and rate_scale <= 0:
        raise InvalidInput(f"--rate-scale {rate_scale:g}: must be > 0")
    if not 1 <= seeds <= 100:
        raise InvalidInput(f"--seeds {seeds}: give 1 to 100")
    if not 1 <= jobs <= MAX_JOBS:
        raise InvalidInput(f"--jobs {jobs}: give 1 to {MAX_JOBS}")
    if not 0 <= seed < TRAIN_SEED:
        raise InvalidInput(f"--seed {seed}: test seeds are 0..{TRAIN_SEED - 1}")
    names = parse_controllers(controllers)
    duration_s = duration_h * 3600.0
    fleet = parse_profile(profile)
    shape = resolve(trace, duration_s, seed)
    train_name, offset = training_split(trace, shape.timeline.span_s)

    def setup(name: str, s: int, off: float) -> Setup:
        return Setup(
            shape=resolve(name, duration_s, s),
            fleet=fleet,
            slo_ttft_s=slo_ttft_s,
            duration_s=duration_s,
            rate_scale=rate_scale,
            seed=s,
            slo_itl_s=slo_itl_s,
            offset_s=off,
        )

    if progress is not None and rate_scale is None:
        progress("calibrating the load on the training split (the whole pool, held)")
    train = calibrated(prepare(setup(train_name, TRAIN_SEED, offset)), jobs)
    tuned = tune(train, names, progress, jobs)
    tests = [
        with_scales(prepare(setup(trace, s, 0.0)), train.rate_scale)
        for s in range(seed, seed + seeds)
    ]
    runs, bounds = _test(tests, tuned, names, jobs, progress)
    return Result(train, tuned, tests, runs, bounds)


def _test(
    tests: list[Prepared],
    tuned: dict[str, Tuned],
    names: tuple[str, ...],
    jobs: int,
    progress: Callable[[str], None] | None,
) -> tuple[dict[str, list[Outcome]], list[Bound]]:
    """Every controller and the bound's search (one call per seed: its windows are searched one
    after another, each below the cheapest certified so far) on each test seed, `jobs` at
    once; the longest calls (the bound's, Steward's) are handed out first."""

    def one(prep: Prepared, name: str) -> Outcome:
        if progress is not None:
            progress(f"test seed {prep.setup.seed}: {name} {tuned[name].entry.knob}".strip())
        return replay(prep, tuned[name].entry)

    first = [n for n in names if n == "steward"]
    rest = [n for n in names if n != "steward"]
    calls: list[Callable[[], Outcome | Bound]] = []
    calls += [partial(bound, prep, TARGET_ATTAINMENT, progress) for prep in tests]
    calls += [partial(one, prep, n) for n in first for prep in tests]
    calls += [partial(one, prep, n) for n in rest for prep in tests]
    results = iter(run_all(calls, jobs))
    bounds = [_bound(next(results)) for _ in tests]
    runs: dict[str, list[Outcome]] = {}
    for n in [*first, *rest]:
        runs[n] = [_outcome(next(results)) for _ in tests]
    return {n: runs[n] for n in names}, bounds


def _outcome(x: Outcome | Bound) -> Outcome:
    assert isinstance(x, Outcome)
    return x


def _bound(x: Outcome | Bound) -> Bound:
    assert isinstance(x, Bound)
    return x


def table(result: Result) -> list[tuple[str, dict[str, Any]]]:
    """(name, summary) of every controller, then the bound's."""
    figures = result.figures()
    controllers = figures["controllers"]
    bound = figures["bound"]
    assert isinstance(controllers, dict) and isinstance(bound, dict)
    return [*controllers.items(), ("bound", bound)]
