"""The comparison: each baseline's main knob on a small grid, choices at equal SLO, the Pareto set.

Each family runs once per grid value (its documented default among them); the value kept is the
one with the fewest GPU-hours among those reaching the attainment target (99 %), or, when none
does, the one with the best attainment. Steward runs once: its policy is the shipped one (with
the benchmark's SLO), nothing of it is tuned. The Pareto set is over every run of every family:
the runs no other run beats on both attainment and GPU-hours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from evals.bench.trace.aibrix import Aibrix
from evals.bench.trace.base import Baseline, Entry
from evals.bench.trace.dynamo import Dynamo
from evals.bench.trace.hpa import Hpa
from evals.bench.trace.keda import Keda
from evals.bench.trace.oracle import Oracle, Static
from evals.bench.trace.rayserve import RayServe
from evals.bench.trace.replay import Outcome, Prepared, replay
from evals.bench.trace.steward import Steward, steward_policy
from tools.backends.sim import SimCluster
from tools.errors import InvalidInput

TARGET_ATTAINMENT = 0.99
CONTROLLERS = ("steward", "static", "keda", "hpa", "dynamo", "rayserve", "aibrix", "oracle")
SHARES = (0.5, 0.65, 0.8, 0.95)
GRIDS: dict[str, tuple[tuple[Callable[[float], Baseline], str], Sequence[float]]] = {
    "static": ((lambda u: Static(utilization=u), "peak_utilization"), SHARES),
    "keda": ((lambda v: Keda(threshold=v), "threshold"), (1.0, 3.0, 10.0, 30.0)),
    "hpa": ((lambda v: Hpa(target_utilization=v), "target_utilization"), SHARES),
    "dynamo": ((lambda v: Dynamo(capacity_share=v), "capacity_share"), SHARES),
    "rayserve": (
        (lambda v: RayServe(target_ongoing_requests=v), "target_ongoing_requests"),
        (2.0, 8.0, 32.0, 128.0),
    ),
    "aibrix": (
        (lambda v: Aibrix(target_concurrency=v), "target_concurrency"),
        (8.0, 32.0, 64.0, 128.0),
    ),
    "oracle": ((lambda u: Oracle(utilization=u), "utilization"), SHARES),
}


def parse_controllers(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    wrong = [n for n in names if n not in CONTROLLERS]
    if wrong or not names:
        raise InvalidInput(
            f"--controllers {text!r}: unknown {', '.join(wrong) or '(none given)'}; "
            f"choose among {','.join(CONTROLLERS)}"
        )
    return tuple(dict.fromkeys(names))


def entries(prep: Prepared, name: str) -> list[Entry]:
    """The runs of one family: its grid, or Steward's single run."""
    if name == "steward":
        pools = set(prep.timelines)
        policy = steward_policy(prep.setup.fleet is not None, pools, prep.setup.slo_s)

        def build(sim: SimCluster, data_dir: Path) -> Steward:
            return Steward(sim, data_dir, policy)

        return [Entry("steward", "", build, lambda *_: None)]
    (make, knob), grid = GRIDS[name]
    out = []
    for value in grid:
        controller = make(value)
        out.append(Entry(name, f"{knob}={value:g}", _fixed(controller), controller.initial))
    return out


def _fixed(controller: Baseline) -> Callable[[SimCluster, Path], Baseline]:
    return lambda sim, data_dir: controller


def run_all(
    prep: Prepared, names: Iterable[str], progress: Callable[[str], None] | None = None
) -> dict[str, list[Outcome]]:
    runs: dict[str, list[Outcome]] = {}
    for name in names:
        for entry in entries(prep, name):
            if progress is not None:
                progress(f"{name} {entry.knob}".strip())
            runs.setdefault(name, []).append(replay(prep, entry))
    return runs


def choose(outcomes: Sequence[Outcome]) -> Outcome:
    """The tuned run: fewest GPU-hours at the target attainment, else the best attainment."""
    meeting = [o for o in outcomes if o.figures.slo_attainment >= TARGET_ATTAINMENT]
    if meeting:
        return min(meeting, key=lambda o: (o.figures.gpu_hours, o.knob))
    return max(outcomes, key=lambda o: (o.figures.slo_attainment, -o.figures.gpu_hours))


def pareto(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """Runs no other run beats on both attainment (higher) and GPU-hours (lower)."""
    pool = list(outcomes)
    front = [
        o for o in pool
        if not any(
            p.figures.slo_attainment >= o.figures.slo_attainment
            and p.figures.gpu_hours <= o.figures.gpu_hours
            and (p.figures.slo_attainment, p.figures.gpu_hours)
            != (o.figures.slo_attainment, o.figures.gpu_hours)
            for p in pool
        )
    ]  # fmt: skip
    return sorted(front, key=lambda o: o.figures.gpu_hours)
